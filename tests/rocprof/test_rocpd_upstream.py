"""The rocpd reader against rocprofiler-sdk's own schema and views, where ROCm 7 is installed.

rocprofv3 creates its databases from SQL files it installs (``share/rocprofiler-sdk-rocpd``: the tables, the
unsuffixed views, and the ``kernels`` / ``memory_copies`` / ``regions`` data views). This test builds databases
with those very files, fills them as rocprofv3 does (one database per process, two nodes) and checks that
lumikit reads the same rows as the upstream views. It runs on LUMI's ROCm 7 containers (``$ROCM_PATH``) or with
``ROCPD_SQL_DIR`` pointing at the files, and skips elsewhere: the SQL is ROCm's, not copied into this project.
"""
from __future__ import annotations

import json
import os
import random
import sqlite3
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lumikit.cli import main
from lumikit.rocprof.rocpd import read_rocpd

SQL_FILES = ("rocpd_tables.sql", "rocpd_views.sql", "data_views.sql")


def _sql_dir() -> Path | None:
    candidates = [os.environ.get("ROCPD_SQL_DIR"), os.environ.get("ROCM_PATH") and
                  os.path.join(os.environ["ROCM_PATH"], "share", "rocprofiler-sdk-rocpd"),
                  "/opt/rocm/share/rocprofiler-sdk-rocpd"]
    for c in candidates:
        if c and all((Path(c) / f).is_file() for f in SQL_FILES):
            return Path(c)
    return None


SQL = _sql_dir()
pytestmark = pytest.mark.skipif(SQL is None, reason="rocprofiler-sdk's rocpd SQL not found (ROCm 7: "
                                "$ROCM_PATH/share/rocprofiler-sdk-rocpd, or set ROCPD_SQL_DIR)")
KERNELS = [("_Z4gemmPfS_", "Cijk_Alik_Bljk_SB_MT64x64x16"), ("_Z3addPfS_", "void add<float>(float*, float*)"),
           ("_Z4ncclv", "ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)")]
STRINGS = ["hipLaunchKernel", "hipMemcpyAsync", "HIP_RUNTIME_API_EXT", "KERNEL_DISPATCH", "MEMORY_COPY",
           "MEMORY_COPY_HOST_TO_DEVICE"]


def _create(path: Path) -> tuple[sqlite3.Connection, str]:
    """An empty database made the way rocprofv3 makes one: its SQL with this file's uuid suffix and guid."""
    sfx, guid = "_" + str(uuid.uuid4()).replace("-", "_"), str(uuid.uuid4())
    con = sqlite3.connect(path)
    for name in SQL_FILES:
        sql = (SQL / name).read_text().replace("{{uuid}}", sfx).replace("{{guid}}", guid)
        if name == "rocpd_views.sql":  # a view of a table this schema version lacks (pc sampling) is left out
            sql = ";".join(s for s in sql.split(";") if _source_exists(s, con))
        con.executescript(sql)
    return con, sfx


def _source_exists(statement: str, con: sqlite3.Connection) -> bool:
    source = statement.rsplit("FROM", 1)[-1].strip().strip("`")
    return not source or con.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (source,)).fetchone() is not None


def _fill(con: sqlite3.Connection, sfx: str, host: str, pid: int, seed: int) -> None:
    """One process on one node: 48 dispatches on two GCDs, 12 host-to-device copies, 60 HIP API regions."""
    def t(name: str) -> str:
        return f"`{name}{sfx}`"

    run = con.execute
    run(f"INSERT INTO {t('rocpd_info_node')} (id, hash, machine_id, hostname) VALUES (1, ?, ?, ?)", (seed, host, host))
    run(f"INSERT INTO {t('rocpd_info_process')} (id, nid, pid, command, start, end) VALUES (1, 1, ?, 'python x.py', 0, "
        "1000000000)", (pid,))
    run(f"INSERT INTO {t('rocpd_info_thread')} (id, nid, pid, tid) VALUES (1, 1, 1, ?)", (pid,))
    run(f"INSERT INTO {t('rocpd_info_agent')} (id, nid, pid, type, absolute_index, logical_index, type_index, name) "
        "VALUES (1, 1, 1, 'CPU', 0, 0, 0, 'cpu'), (2, 1, 1, 'GPU', 1, 1, 0, 'gfx90a'), (3, 1, 1, 'GPU', 2, 2, 1, 'gfx90a')")
    run(f"INSERT INTO {t('rocpd_info_queue')} (id, nid, pid, name) VALUES (1, 1, 1, 'queue 0')")
    run(f"INSERT INTO {t('rocpd_info_stream')} (id, nid, pid, name) VALUES (1, 1, 1, 'stream 0')")
    run(f"INSERT INTO {t('rocpd_info_code_object')} (id, nid, pid, agent_id, uri) VALUES (1, 1, 1, 2, 'file://a.out')")
    for i, (symbol, shown) in enumerate(KERNELS, 1):
        run(f"INSERT INTO {t('rocpd_info_kernel_symbol')} (id, nid, pid, code_object_id, kernel_name, display_name) "
            "VALUES (?, 1, 1, 1, ?, ?)", (i, symbol, shown))
    for i, text in enumerate(STRINGS, 1):
        run(f"INSERT INTO {t('rocpd_string')} (id, string) VALUES (?, ?)", (i, text))
    rng, ts, event = random.Random(seed), 1000, 0
    for n in range(60):
        corr, launch = n + 1, bool(n % 5)
        event += 1
        run(f"INSERT INTO {t('rocpd_event')} (id, category_id, correlation_id) VALUES (?, 3, ?)", (event, corr))
        run(f"INSERT INTO {t('rocpd_region')} (nid, pid, tid, start, end, name_id, event_id) VALUES (1, 1, 1, ?, ?, ?, ?)",
            (ts, ts + 5, 1 if launch else 2, event))
        event += 1
        run(f"INSERT INTO {t('rocpd_event')} (id, category_id, correlation_id) VALUES (?, ?, ?)",
            (event, 4 if launch else 5, corr))
        if launch:
            kernel = 1 + n % 3
            run(f"INSERT INTO {t('rocpd_kernel_dispatch')} (nid, pid, tid, agent_id, kernel_id, dispatch_id, queue_id, "
                "stream_id, start, end, workgroup_size_x, workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, "
                "grid_size_z, region_name_id, event_id) VALUES (1, 1, 1, ?, ?, ?, 1, 1, ?, ?, 256, 1, 1, 65536, 1, 1, 1, ?)",
                (2 + n % 2, kernel, corr, ts + 8, ts + 8 + rng.randint(5, 200) * (3 if kernel == 1 else 1), event))
        else:
            run(f"INSERT INTO {t('rocpd_memory_copy')} (nid, pid, tid, start, end, name_id, dst_agent_id, src_agent_id, "
                "size, queue_id, stream_id, region_name_id, event_id) VALUES (1, 1, 1, ?, ?, 6, 2, 1, ?, 1, 1, 2, ?)",
                (ts + 8, ts + 40, 4096 * corr, event))
        ts += 300
    con.commit()


@pytest.fixture(scope="module")
def databases(tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("rocpd-upstream")
    paths = []
    for seed, (host, pid) in enumerate((("nid005001", 101), ("nid005002", 202))):
        path = folder / f"{host}" / f"{pid}_results.db"
        path.parent.mkdir()
        con, sfx = _create(path)
        _fill(con, sfx, host, pid, seed)
        con.close()
        paths.append(path)
    return paths


def _upstream(paths: list[Path], query: str) -> pd.DataFrame:
    frames = []
    for path in paths:
        with sqlite3.connect(path) as con:
            frames.append(pd.read_sql_query(query, con))
    return pd.concat(frames, ignore_index=True)


def _rows(table: pd.DataFrame, columns: list[str]) -> list[tuple]:
    return sorted(map(tuple, table[columns].astype(str).values.tolist()))


def test_kernels_copies_and_api_equal_the_upstream_views(databases):
    ours = read_rocpd(databases)
    kernels = _upstream(databases, "SELECT name, start, end, agent_abs_index, corr_id, pid FROM kernels")
    assert len(ours.kernels) == len(kernels) == 96
    assert _rows(ours.kernels, ["name", "start_ns", "end_ns", "agent_id", "correlation_id", "pid"]) == \
        _rows(kernels, ["name", "start", "end", "agent_abs_index", "corr_id", "pid"])
    copies = _upstream(databases, "SELECT name, start, end, size, src_agent_abs_index, dst_agent_abs_index, corr_id "
                                  "FROM memory_copies")
    assert len(ours.copies) == len(copies) == 24
    assert _rows(ours.copies, ["name", "start_ns", "end_ns", "size_bytes", "src_agent_id", "dst_agent_id",
                               "correlation_id"]) == \
        _rows(copies, ["name", "start", "end", "size", "src_agent_abs_index", "dst_agent_abs_index", "corr_id"])
    regions = _upstream(databases, "SELECT name, category, start, end, corr_id, tid FROM regions")
    assert len(ours.api) == len(regions) == 120
    assert _rows(ours.api, ["name", "category", "start_ns", "end_ns", "correlation_id", "tid"]) == \
        _rows(regions, ["name", "category", "start", "end", "corr_id", "tid"])


def test_stats_rank_kernels_as_the_upstream_view_adds_them_up(databases, capsys):
    view = _upstream(databases, "SELECT name, end - start AS ns FROM kernels").groupby("name")["ns"].agg(["count", "sum"])
    expected = [(name, int(row["count"]), float(row["sum"])) for name, row in
                view.sort_values("sum", ascending=False).iterrows()]
    assert main(["rocprof", "stats", str(databases[0].parents[1]), "--json", "--top", "0"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert [(k["name"], k["calls"], float(k["total_ns"])) for k in stats["kernels"]] == expected


def _tracelens_port():
    """rocpd's ``tracelens_port`` module (ROCm/rocm-systems develop, rocpd/tracelens_port.py) from the file that
    ``TRACELENS_PORT`` names, with its one import (the connection helper) given as plain sqlite3; None without it."""
    path = os.environ.get("TRACELENS_PORT")
    if not path or not Path(path).is_file():
        return None
    source = Path(path).read_text()
    source = source.replace("from .importer import RocpdImportData, execute_statement", "")
    namespace = {"RocpdImportData": sqlite3.Connection, "__name__": "tracelens_port",
                 "execute_statement": lambda con, query, params: con.execute(query, params)}
    exec(compile(source, path, "exec"), namespace)  # ROCm's code, read at test time, never copied here
    return namespace


@pytest.mark.skipif(_tracelens_port() is None, reason="rocpd's tracelens_port.py not found: set TRACELENS_PORT to "
                    "a copy of projects/rocprofiler-sdk/source/lib/python/rocpd/tracelens_port.py (ROCm/rocm-systems)")
def test_interval_timeline_and_communication_time_equal_amds_tracelens_port(databases):
    from lumikit.rocprof.rocpd import read_rocpd
    from lumikit.trace.metrics import intersection_length, merge_intervals, union_length

    port = _tracelens_port()
    for path in databases:
        with sqlite3.connect(path) as con:
            timeline = port["compute_interval_timeline"](con)
            categories = {c["category"]: c for c in port["analyze_kernels_by_category"](con, timeline["total_wall_ns"])}
        acts = read_rocpd(path)
        k, c = acts.kernels, acts.copies
        ks, ke = k["start_ns"].to_numpy(), k["end_ns"].to_numpy()
        cs, ce = c["start_ns"].to_numpy(), c["end_ns"].to_numpy()
        wall = max(ke.max(), ce.max()) - min(ks.min(), cs.min())
        compute = union_length(ks, ke)
        exposed = union_length(cs, ce) - intersection_length((cs, ce), (ks, ke))
        busy = union_length(*merge_intervals(np.concatenate([ks, cs]), np.concatenate([ke, ce])))
        assert timeline["total_wall_ns"] == wall
        assert timeline["true_compute_ns"] == compute
        assert timeline["exposed_memcpy_ns"] == exposed
        assert timeline["idle_ns"] == wall - busy
        communication = k.loc[k["kernel_class"] == "communication", "duration_ns"]
        nccl = categories.get("NCCL", {"total_ns": 0, "count": 0})
        # Where the port is wrong: its NCCL pattern misses RCCL's current kernel name "ncclDevKernel_Generic..."
        # (it files them under Other); the workbook counts them as communication.
        names = k.loc[k["kernel_class"] == "communication", "name"].astype(str)
        missed = names.map(lambda n: port["categorize_kernel_name"](n) != "NCCL")
        assert names[missed].str.startswith("ncclDevKernel").all()
        assert (nccl["total_ns"], nccl["count"]) == (int(communication[~missed.to_numpy()].sum()), int((~missed).sum()))
        assert sum(c["total_ns"] for c in categories.values()) == int(k["duration_ns"].sum())
        print(f"{path.name}: wall {wall} ns, true compute {compute} ns, exposed copies {exposed} ns, idle "
              f"{wall - busy} ns; categories {({n: c['total_ns'] for n, c in categories.items()})}")

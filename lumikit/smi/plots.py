"""Pictures of snapshots: per-device timelines (power, busy %, VRAM %) and a node map of the GCDs.

Figures are built with :class:`matplotlib.figure.Figure` (no pyplot state), so they can be drawn from a
background thread and returned to a notebook cell, which shows them.
"""
from __future__ import annotations

import html
from typing import Any, Mapping, Sequence

import pandas as pd
from matplotlib.figure import Figure

from matplotlib.patches import FancyBboxPatch, Rectangle

from ..plotting import figure, mark_generated

from ..site import Site, load_site
from .interpret import activity_table
from .model import Snapshot
from .sessions import tidy

ACTIVITY_COLOURS = {
    "busy": "#2e7d32", "idle-low-clock": "#c62828", "idle": "#f9a825", "unknown": "#9e9e9e",
}
PACKAGE_COLOURS = {"both": "#c8e6c9", "one": "#fff9c4", "idle": "#eeeeee", "unknown": "#fafafa"}


def from_generated(snapshots: Sequence[Snapshot] | Snapshot) -> bool:
    """Whether snapshots come from a generated session: a session's snapshots carry its label, ``name
    (generated)``, in their source (:meth:`lumikit.smi.sessions.Session.snapshots`)."""
    snaps = [snapshots] if isinstance(snapshots, Snapshot) else snapshots
    return any("(generated)" in str(getattr(s, "source", "")) for s in snaps)


def shares_packages(df: pd.DataFrame) -> bool:
    """Whether two devices of one node share a package (an MI250X's two GCDs), as the session's readings say."""
    if "package" not in df or df["package"].isna().all():
        return False
    keys = [c for c in ("host", "package") if c in df]
    return bool((df.dropna(subset=["package"]).groupby(keys, dropna=False)["index"].nunique() > 1).any())


def power_subtitle(df: pd.DataFrame) -> str:
    """The power panel's subtitle: where the power of a shared package shows, only for a session that has one."""
    if shares_packages(df):
        return "power (MI250X: each package's power shows on its even GCD, the odd one prints none)"
    return "power (W per GPU, as its tool reports it)"


def timeline(snapshots: Sequence[Snapshot] | pd.DataFrame, devices: Sequence[int] | None = None, *,
             title: str | None = None, now: float | None = None, width: float = 9.0,
             generated: bool | None = None) -> Figure:
    """Three stacked panels against time: power (W; the package power sits on the even GCD on MI250X), busy %
    and VRAM %, one line per device. ``devices`` selects; ``now`` draws a cursor. ``generated`` marks the image
    (default: whether the snapshots come from a generated session; a table cannot tell, so say it)."""
    if generated is None:
        generated = not isinstance(snapshots, pd.DataFrame) and from_generated(snapshots)
    df = snapshots if isinstance(snapshots, pd.DataFrame) else tidy(snapshots)
    fig = figure(figsize=(width, 6.0), layout="constrained")
    if generated:
        mark_generated(fig, "session")
    axes = fig.subplots(3, 1, sharex=True)
    if df.empty:
        axes[0].set_title(title or "no samples yet")
        return fig
    if df["task"].notna().any():  # several srun tasks: show the one that sees the most devices
        task = df.groupby("task")["index"].nunique().idxmax()
        df = df[df["task"] == task]
    if devices is not None:
        df = df[df["index"].isin(list(devices))]
    t0 = df["time"].min()
    x = df["time"] - (t0 if t0 is not None and t0 > 1e8 else 0)  # epoch seconds -> seconds since the start
    df = df.assign(x=x)
    panels = (("power_w", "power (W)"), ("gpu_busy_pct", "busy (%)"), ("vram_pct", "VRAM (%)"))
    unit = "GCD" if shares_packages(df) else "GPU"
    for ax, (col, label) in zip(axes, panels):
        for idx, g in df.groupby("index", sort=True):
            if g[col].notna().any():
                ax.plot(g["x"], g[col], label=f"{unit} {idx}", linewidth=1.3, color=f"C{int(idx) % 10}")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
        if now is not None:
            ax.axvline(now, color="black", linewidth=0.8, linestyle="--")
    axes[1].set_ylim(-5, 105)
    axes[2].set_ylim(-5, 105)
    axes[-1].set_xlabel("time (s)")
    axes[0].set_title(power_subtitle(df), fontsize=8, loc="left")
    handles, labels = axes[1].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside right upper", fontsize="small")
    if title:
        fig.suptitle(title)
    return fig


def node_map(snapshot: Snapshot, site: str | Site = "lumi", *, title: str | None = None,
             generated: bool | None = None) -> Figure:
    """The node's GCDs grouped by NUMA domain and package, each tile coloured by its activity (busy, idle at a low
    clock, idle), each package shaded by what its power says (one or both GCDs busy). ``generated`` marks the
    image (default: whether the snapshot comes from a generated session)."""
    s = load_site(site)
    rows = {r["index"]: r for r in activity_table(snapshot, s.power)}
    readings = {d.index: d for d in snapshot.devices}
    numa_domains = sorted({g.numa for g in s.node.gcds})
    fig = figure(figsize=(2.8 * len(numa_domains) + 0.4, 3.8), layout="constrained")
    ax = fig.subplots()
    ax.set_xlim(0, len(numa_domains))
    ax.set_ylim(0, 1.15)
    ax.axis("off")
    for col, numa in enumerate(numa_domains):
        ax.add_patch(Rectangle((col + 0.03, 0.02), 0.94, 1.0, fill=False, linestyle=":", edgecolor="#607d8b"))
        ax.text(col + 0.5, 1.06, f"NUMA {numa}", ha="center", va="center", fontsize=12, color="#37474f")
        packages = sorted({g.package for g in s.node.gcds if g.numa == numa})
        for p_i, pkg in enumerate(packages):
            gcds = [g for g in s.node.gcds if g.package == pkg]
            members = [rows[g.index] for g in gcds if g.index in rows]
            pact = members[0]["package_activity"] if members else "unknown"
            power = members[0]["package_power_w"] if members else None
            height = 0.9 / len(packages)
            y0 = 0.06 + p_i * height
            ax.add_patch(FancyBboxPatch((col + 0.08, y0), 0.84, height - 0.04, boxstyle="round,pad=0.01",
                                        facecolor=PACKAGE_COLOURS.get(pact, "#fafafa"), edgecolor="#455a64"))
            watts = f"{power:.0f} W" if power is not None else "power n/a"
            ax.text(col + 0.5, y0 + height - 0.09, f"package {pkg}: {watts}", ha="center", fontsize=11)
            for k, g in enumerate(gcds):
                d = readings.get(g.index)
                act = rows.get(g.index, {}).get("activity", "unknown")
                x0 = col + 0.13 + k * 0.39
                ax.add_patch(Rectangle((x0, y0 + 0.05), 0.35, height - 0.2,
                                       facecolor=ACTIVITY_COLOURS.get(str(act), "#9e9e9e"), alpha=0.85))
                busy = f"{d.gpu_busy_pct:.0f} %" if d is not None and d.gpu_busy_pct is not None else "-"
                clk = f"{d.sclk_mhz:.0f} MHz" if d is not None and d.sclk_mhz is not None else ""
                ax.text(x0 + 0.175, y0 + 0.05 + (height - 0.2) / 2, f"GCD {g.index}\n{busy}\n{clk}",
                        ha="center", va="center", fontsize=11, color="white", fontweight="bold")
    fig.suptitle(title or "node map: GCDs by NUMA domain and package (green busy, red idle at low clock)",
                 fontsize=12)
    if generated if generated is not None else from_generated(snapshot):
        mark_generated(fig, "session")
    return fig


# ---- the node x GCD grid of a run: every node and GCD of a job at once ------------------------------------------

CSS_GRID = "lumikit-gpu-grid"
GRID_LEGEND = (("busy", "computing"), ("idle-low-clock", "idle at a low clock"), ("idle", "idle"),
               ("unknown", "no reading"))


def _fmt(v: float | None, unit: str, digits: int = 0) -> str:
    return "-" if v is None else f"{v:.{digits}f} {unit}"


def node_grid_html(latest: Mapping[str, Snapshot | None], *, kinds: Mapping[str, str] | None = None,
                   site: str | Site = "lumi", when: str = "") -> str:
    """Every node (a row) and GCD (a column) of a job as an HTML table: each cell gives busy %, power (the
    package power sits on the even GCD of an MI250X: the odd GCD says "on GCD n-1") and VRAM, coloured by the
    GCD's activity. ``kinds`` labels each node generated / recorded / absent (no SMI tool). A table, not a
    rendered image: cheap enough to redraw every 2 s in a notebook."""
    kinds = kinds or {}
    rows_by_node: dict[str, dict[int, tuple[Any, str]]] = {}
    columns: set[int] = set()
    for node, snap in latest.items():
        cells: dict[int, tuple[Any, str]] = {}
        if snap is not None:
            act = {r["index"]: str(r["activity"]) for r in activity_table(snap, load_site(site).power)}
            for d in snap.devices:
                if d.task is None or d.task == snap.devices[0].task:
                    cells[d.index] = (d, act.get(d.index, "unknown"))
        rows_by_node[node] = cells
        columns |= set(cells)
    cols = sorted(columns) or [0]
    head = "".join(f"<th style='padding:2px 8px'>GCD {i}</th>" for i in cols)
    body = []
    for node, cells in rows_by_node.items():
        kind = kinds.get(node, "unknown")
        label = (f"<td style='padding:2px 8px;white-space:nowrap'><b>{html.escape(node)}</b><br>"
                 f"<span style='font-size:80%;color:#555'>{html.escape(kind)}</span></td>")
        tds = []
        for i in cols:
            if i not in cells:
                why = "no SMI tool on this node" if kind == "absent" else "no reading yet"
                tds.append(f"<td class='lumikit-gcd-cell' data-node='{html.escape(node)}' data-gcd='{i}' "
                           f"style='background:{ACTIVITY_COLOURS['unknown']};color:white;padding:4px 8px;"
                           f"font-size:85%'>{why}</td>")
                continue
            d, act = cells[i]
            if d.power_w is not None:
                power = _fmt(d.power_w, "W")
            elif i % 2 == 1 and i - 1 in cells and cells[i - 1][0].power_w is not None:
                power = f"pkg on GCD {i - 1}"
            else:
                power = "power n/a"
            vram = _fmt(d.vram_pct, "%") if d.vram_pct is not None else (
                _fmt(d.vram_used_bytes / 1e9, "GB", 1) if d.vram_used_bytes is not None else "-")
            tds.append(f"<td class='lumikit-gcd-cell' data-node='{html.escape(node)}' data-gcd='{i}' "
                       f"data-activity='{html.escape(act)}' title='{html.escape(node)} GCD {i}: {html.escape(act)}' "
                       f"style='background:{ACTIVITY_COLOURS.get(act, '#9e9e9e')};color:white;padding:4px 8px;"
                       f"font-size:85%;line-height:1.25'><b>{_fmt(d.gpu_busy_pct, '%')}</b> busy<br>{power}<br>"
                       f"VRAM {vram}</td>")
        body.append(f"<tr>{label}{''.join(tds)}</tr>")
    legend = " ".join(f"<span style='background:{ACTIVITY_COLOURS[k]};color:white;padding:0 6px'>{w}</span>"
                      for k, w in GRID_LEGEND)
    caption = f"every node and GCD{(' ' + html.escape(when)) if when else ''}: {legend}"
    return (f"<table class='{CSS_GRID}' style='border-collapse:separate;border-spacing:3px'>"
            f"<caption style='caption-side:top;text-align:left;font-size:85%'>{caption}</caption>"
            f"<thead><tr><th></th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")

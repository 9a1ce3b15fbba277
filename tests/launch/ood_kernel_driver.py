"""Run inside a Slurm job, the way Open OnDemand's Jupyter app runs: start a Jupyter kernel in this job's
environment (its SLURM_* included) and execute the code cells of the given notebooks in it, in order.

    python ood_kernel_driver.py RESULT.json WORKDIR NOTEBOOK.py [NOTEBOOK.py ...]

Writes, per notebook, the cells' outputs and the first error (if any) to RESULT.json. Used by
test_ood_rehearsal.py; not a test module itself.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main(result: str, workdir: str, *notebooks: str) -> int:
    import jupytext
    from jupyter_client.manager import KernelManager

    km = KernelManager(kernel_name="python3")
    km.start_kernel(cwd=workdir, env=dict(os.environ))
    kc = km.client()
    kc.start_channels()
    report: dict[str, object] = {"slurm_job_id": os.environ.get("SLURM_JOB_ID"),
                                 "slurm_mem_per_node": os.environ.get("SLURM_MEM_PER_NODE"), "notebooks": {}}
    try:
        kc.wait_for_ready(timeout=120)
        for path in notebooks:
            nb = jupytext.read(path)
            outputs: list[str] = []
            error = None
            for cell in nb.cells:
                if cell.cell_type != "code" or not cell.source.strip():
                    continue
                texts: list[str] = []

                def keep(msg: dict, texts: list[str] = texts) -> None:
                    content = msg["content"]
                    if msg["msg_type"] == "stream":
                        texts.append(content["text"])
                    elif msg["msg_type"] in ("execute_result", "display_data"):
                        texts.append(content.get("data", {}).get("text/plain", ""))
                    elif msg["msg_type"] == "error":
                        texts.append("\n".join(content["traceback"]))

                reply = kc.execute_interactive(cell.source, timeout=600, output_hook=keep)
                outputs.append("".join(texts))
                if reply["content"]["status"] != "ok":
                    error = {"cell": cell.source, "output": "".join(texts)}
                    break
            report["notebooks"][Path(path).name] = {"outputs": outputs, "error": error}  # type: ignore[index]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        Path(result).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))

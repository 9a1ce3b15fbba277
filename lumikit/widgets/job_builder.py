"""A job-builder widget: pick partition, nodes, GCDs, container and profiling; see the command LUMI needs.

The widget only composes a :class:`~lumikit.jobs.JobSpec` and shows what :mod:`lumikit.jobs` renders; validation
errors appear inline, and the batch script can be saved (never over an existing file).
"""
from __future__ import annotations

import html
from pathlib import Path

import ipywidgets as W

from ..config import UserConfig, load_config
from ..errors import LumikitError
from ..files import write_new
from ..jobs import JobSpec, problems, render_sbatch, render_srun
from ..jobs.billing import estimate
from ..jobs.render import resolve
from ..jobs.profiling import MODES
from ..site import Site, load_site


class JobBuilder(W.VBox):
    """``JobBuilder(command=["python", "train.py"])``; ``.spec`` is the current job, ``.command_text`` its srun."""

    def __init__(self, command: list[str] | tuple[str, ...] = ("python", "train.py"),
                 site: Site | str | None = None, config: UserConfig | None = None, **initial: object) -> None:
        # the edge: site and user config are read once here; every refresh renders from these values only
        self.site = load_site(site)
        self.config = load_config() if config is None else config
        self.command = tuple(command)
        gpu_parts = [p.name for p in self.site.partitions.values()]
        self.partition = W.Dropdown(options=gpu_parts, value=initial.get("partition", self.site.default_partition),
                                    description="partition")
        self.nodes = W.BoundedIntText(value=int(initial.get("nodes", 1)), min=1, max=1024, description="nodes")
        self.gcds = W.IntSlider(value=int(initial.get("gpus_per_node", 1)), min=0, max=self.site.node.gcd_count,
                                description="GCDs/node")
        self.one_task_per_gcd = W.Checkbox(value=bool(initial.get("one_task_per_gcd", True)),
                                           description="one task per GCD")
        self.exclusive = W.Checkbox(value=bool(initial.get("exclusive", False)), description="exclusive")
        self.masks = W.Checkbox(value=bool(initial.get("cpu_bind", False)), description="CPU masks (auto)")
        self.time = W.Text(value=str(initial.get("time", "0:15:00")), description="time")
        containers = ["(none)"] + list(self.site.containers)
        self.container = W.Dropdown(options=containers, value=initial.get("container", "(none)"),
                                    description="container")
        self.profile = W.Dropdown(options=["(none)"] + list(MODES), value=initial.get("profile", "(none)"),
                                  description="profile")
        self.profile_rank = W.Text(value=str(initial.get("profile_rank", "")), description="rank(s)",
                                   placeholder="e.g. 0 or 3,5 (empty: all)")
        self.kind = W.ToggleButtons(options=["srun", "sbatch"], value="srun")
        self.out = W.HTML()
        self.out.add_class("lumikit-job-command")
        self.errors = W.HTML()
        self.errors.add_class("lumikit-job-errors")
        self.cost = W.HTML()
        self.cost.add_class("lumikit-job-cost")
        self.filename = W.Text(value="job.sh", description="save as")
        self.save = W.Button(description="Save batch script", icon="save")
        self.saved = W.HTML()
        self.save.on_click(self._save)
        controls = [self.partition, self.nodes, self.gcds, self.one_task_per_gcd, self.exclusive, self.masks,
                    self.time, self.container, self.profile, self.profile_rank, self.kind]
        for c in controls:
            c.observe(lambda _change: self.refresh(), names="value")
        super().__init__([
            W.HTML(f"<b>Job builder</b> &mdash; site <code>{html.escape(self.site.name)}</code>, command "
                   f"<code>{html.escape(' '.join(self.command))}</code>"),
            W.HBox([W.VBox(controls[:6]), W.VBox(controls[6:])]),
            self.errors, self.cost, self.out, W.HBox([self.filename, self.save]), self.saved])
        self.add_class("lumikit-job-builder")
        self.refresh()

    @property
    def spec(self) -> JobSpec:
        g = self.gcds.value
        ranks = tuple(int(r) for r in self.profile_rank.value.replace(" ", "").split(",") if r.isdigit())
        return resolve(JobSpec(
            command=self.command, partition=self.partition.value, nodes=self.nodes.value, gpus_per_node=g or None,
            ntasks_per_node=g if (self.one_task_per_gcd.value and g) else 1,
            cpus_per_task=self.site.node.cpus_per_gcd if (self.one_task_per_gcd.value or g <= 1) and g else
            (self.site.node.cpus_per_gcd * g if g else None),
            mem_per_gpu=f"{self.site.node.usable_memory_per_gcd_gb}G" if g else None,
            time=self.time.value or None, exclusive=self.exclusive.value,
            cpu_bind="auto" if self.masks.value else None,
            container=None if self.container.value == "(none)" else self.container.value,
            profile=None if self.profile.value == "(none)" else self.profile.value, profile_ranks=ranks),
            self.site, self.config)

    @property
    def command_text(self) -> str:
        return render_srun(self.spec, self.site).text()

    def refresh(self) -> None:
        try:
            spec = self.spec
            found = problems(spec, self.site)
        except LumikitError as exc:
            spec, found = None, [exc]
        if found:
            items = "".join(f"<li>{html.escape(str(e))}</li>" for e in found)
            self.errors.value = f"<div style='color:#b00020'><b>LUMI would refuse this job:</b><ul>{items}</ul></div>"
            self.out.value = ""
            self.cost.value = ""
            self.save.disabled = True
            return
        self.errors.value = ""
        self.cost.value = self._cost_html(spec)
        self.save.disabled = False
        # problems() above is this refresh's one validation
        text = (render_srun(spec, self.site, check=False).text() if self.kind.value == "srun"
                else render_sbatch(spec, self.site, check=False))
        self.out.value = f"<pre style='white-space:pre-wrap'>{html.escape(text)}</pre>"

    def _cost_html(self, spec: JobSpec) -> str:
        """The job's bill (LUMI's billing rule from the site profile) and its warnings, live with every change."""
        bill = estimate(spec, self.site)
        if bill is None:
            return ""
        warn = "".join(f"<li style='color:#a05a00'>{html.escape(w)}</li>" for w in bill.warnings)
        return f"<div><b>cost:</b> {html.escape(bill.text())}" + (f"<ul>{warn}</ul>" if warn else "") + "</div>"

    def _save(self, _button: object = None) -> Path | None:
        try:
            path = write_new(self.filename.value, render_sbatch(self.spec, self.site))
        except LumikitError as exc:
            self.saved.value = f"<span style='color:#b00020'>{html.escape(str(exc))}</span>"
            return None
        self.saved.value = f"saved <code>{html.escape(str(path))}</code>: submit it with <code>sbatch {html.escape(str(path))}</code>"
        return path

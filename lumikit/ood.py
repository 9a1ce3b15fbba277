"""Course modules for LUMI's Open OnDemand "Jupyter for Courses" app, rendered from the templates in lumi/ood.

An instructor gives the project, reservation and course name once per edition; the container, partition and
core/memory defaults come from the site profile. Values that are missing or still look like placeholders are
refused, all of them named in one message, so that no half-filled module reaches the learners.

    python -m lumikit.ood render --project project_465000000 --reservation AI_course_day1 -o DIR
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

from .errors import LumikitError, SpecError
from .files import write_atomic
from .site import Site, load_site

TEMPLATES_DIR = Path(__file__).resolve().parents[1] / "lumi" / "ood" / "templates"
# Output name (with {course}) -> template file.
TEMPLATES = {"{course}.lua": "course.lua.tmpl", "{course}-resources.yml": "course-resources.yml.tmpl"}
DEFAULT_COURSE = "lumi-ai-workbook"
DEFAULT_TIME = "02:00:00"
MODULES_DIR = "/projappl/{project}/www_lumi_modules"

_SLOT = re.compile(r"\{\{\s*(\w+)\s*\}\}")
# What an unfilled value looks like: <...>, {{...}}, ${...}, XXX, TODO, CHANGE_ME, your_..., placeholder, ...
_PLACEHOLDER = re.compile(r"<[^>]*>|\{\{|\}\}|\$\{|^x{2,}$|_x{3,}|todo|fixme|change[_-]?me|\byour[_-]|placeholder",
                          re.IGNORECASE)
_UNSAFE = re.compile(r"[\"'\\\s`$]")  # would break a Lua or YAML string, or a shell that reads it
_PROJECT = re.compile(r"^project_\d+$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_TIME = re.compile(r"^(?:(\d+)-)?(\d{1,2}):(\d{2}):(\d{2})$")


class CourseValuesError(SpecError):
    """Some values of a course module are missing or still placeholders; ``problems`` maps each to its fix."""

    def __init__(self, problems: dict[str, tuple[str, str]]) -> None:
        self.problems = problems
        names = ", ".join(problems)
        detail = "; ".join(f"{name} {problem}" for name, (problem, _) in problems.items())
        fixes = "; ".join(fix for _, fix in problems.values())
        super().__init__(field=names, problem=detail, fix=fixes)


@dataclass(frozen=True)
class CourseModule:
    """Every value the course templates need, checked. Build it with :func:`course_module`."""

    project: str
    reservation: str
    course: str
    container: str
    venv: str
    git_repo: str
    git_ref: str
    partition: str
    cores: int
    mem: str
    time: str
    hf_home: str
    torch_home: str


def _time_seconds(text: str) -> int | None:
    m = _TIME.match(text)
    if not m:
        return None
    days, h, mi, s = (int(g or 0) for g in m.groups())
    return ((days * 24 + h) * 60 + mi) * 60 + s


def _cache_path(site: Site, name: str, project: str) -> str:
    """A cache folder of the site's ``[env.caches]`` recipe, the project filled in (``${USER}`` stays)."""
    value = site.env.get("caches", {}).get(name, f"/scratch/${{SLURM_JOB_ACCOUNT}}/${{USER}}/{name.lower()}")
    return value.replace("${SLURM_JOB_ACCOUNT}", project)


def course_module(project: str | None, reservation: str | None, *, course: str = DEFAULT_COURSE,
                  container: str | None = None, venv: str | None = None, git_repo: str | None = None,
                  git_ref: str = "", partition: str | None = None, cores: int | None = None,
                  mem_gb: int | None = None, time: str = DEFAULT_TIME, no_reservation: bool = False,
                  site: str | Site = "lumi") -> CourseModule:
    """Check the instructor's values and fill the rest from the site profile.

    ``reservation`` may be left out only with ``no_reservation=True`` (a course without one). ``container`` is a
    name from the site profile or a ``.sif`` path (default: the profile's default container); ``venv`` defaults
    to ``/projappl/<project>/lumi-workbook/venv``, the shared venv that ``lumi/setup-venv.sh --venv`` builds.
    Raises :class:`CourseValuesError` naming every missing, placeholder or malformed value.
    """
    s = load_site(site)
    problems: dict[str, tuple[str, str]] = {}

    def bad(name: str, problem: str, fix: str) -> None:
        problems.setdefault(name, (problem, fix))

    def text(name: str, value: str | None, flag: str, *, required: bool = True) -> str:
        value = (value or "").strip()
        if not value:
            if required:
                bad(name, "is missing", f"pass {flag}")
        elif _PLACEHOLDER.search(value):
            bad(name, f"is still a placeholder ({value!r})", f"pass the real value with {flag}")
        elif _UNSAFE.search(value):
            bad(name, f"has spaces, quotes or '$' ({value!r})", f"pass a plain value with {flag}")
        return value

    project = text("project", project, "--project project_<number>")
    if project and "project" not in problems and not _PROJECT.match(project):
        bad("project", f"is not a LUMI project ({project!r})", "pass --project project_<number>, e.g. project_465000000")
    if no_reservation and (reservation or "").strip():
        bad("reservation", "is given together with no_reservation", "drop one of --reservation and --no-reservation")
    reservation = text("reservation", reservation, "--reservation NAME (or --no-reservation)",
                       required=not no_reservation)
    course = text("course", course, "--course NAME")
    if course and "course" not in problems and not _NAME.match(course):
        bad("course", f"is not a plain name ({course!r})", "pass --course with letters, digits, '.', '_' or '-'")

    sif = ""
    try:
        sif = s.container(container or s.default_container or "").path
    except LumikitError as exc:
        bad("container", f"is unknown ({exc})", "pass --container NAME from the site profile or a .sif path")
    sif = text("container", sif, "--container NAME_OR_SIF")
    if sif and "container" not in problems and not (sif.startswith("/") and sif.endswith(".sif")):
        bad("container", f"is not the absolute path of a .sif image ({sif!r})", "pass --container /path/to/image.sif")

    if not venv and "project" not in problems:
        venv = f"/projappl/{project}/lumi-workbook/venv"
    venv = text("venv", venv, "--venv DIR", required="project" not in problems)
    if venv and "venv" not in problems and not venv.startswith("/"):
        bad("venv", f"is not an absolute path ({venv!r})", "pass --venv /projappl/<project>/...")

    git_repo = text("git_repo", git_repo, "--git-repo URL (where the app clones the workbook from)")
    git_ref = text("git_ref", git_ref, "--git-ref BRANCH_OR_TAG", required=False)

    partition = partition or s.default_partition
    if partition not in s.partitions:
        bad("partition", f"is not a partition of {s.name} ({partition!r})",
            f"pass --partition, one of {', '.join(sorted(s.partitions))}")
    cores = s.node.cpus_per_gcd if cores is None else cores
    if not 1 <= cores <= s.node.cores:
        bad("cores", f"is {cores}", f"pass --cores between 1 and {s.node.cores}")
    mem_gb = s.node.usable_memory_per_gcd_gb if mem_gb is None else mem_gb
    if not 1 <= mem_gb <= s.node.memory_gb:
        bad("mem", f"is {mem_gb} GB", f"pass --mem-gb between 1 and {s.node.memory_gb}")
    seconds = _time_seconds(time)
    if seconds is None or seconds == 0:
        bad("time", f"is not a Slurm time ({time!r})", "pass --time HH:MM:SS, e.g. 02:00:00")
    elif partition in s.partitions:
        limit = _time_seconds(s.partitions[partition].max_time)
        if limit is not None and seconds > limit:
            bad("time", f"{time} is longer than {partition}'s limit {s.partitions[partition].max_time}",
                "pass a shorter --time")

    if problems:
        raise CourseValuesError(problems)
    return CourseModule(project=project, reservation=reservation, course=course, container=sif, venv=venv,
                        git_repo=git_repo, git_ref=git_ref, partition=partition, cores=cores, mem=f"{mem_gb}GB",
                        time=time, hf_home=_cache_path(s, "HF_HOME", project),
                        torch_home=_cache_path(s, "TORCH_HOME", project))


def _lua_path(value: str) -> str:
    """A Lua expression for a path with ``${VAR}`` parts, read from the environment when the module loads."""
    parts = re.split(r"\$\{(\w+)\}", value)
    pieces = [f'"{p}"' if i % 2 == 0 else f'os.getenv("{p}")' for i, p in enumerate(parts) if p or i % 2]
    return " .. ".join(pieces) or '""'


def fill(template: str, values: dict[str, str], *, source: str = "<template>") -> str:
    """Replace every ``{{ name }}`` in ``template``; a name without a value is an error, not an empty string."""
    missing = sorted({m.group(1) for m in _SLOT.finditer(template)} - set(values))
    if missing:
        raise LumikitError(f"{source}: no value for {', '.join(missing)}; the template and lumikit.ood disagree")
    return _SLOT.sub(lambda m: values[m.group(1)], template)


def render_course_module(module: CourseModule, templates_dir: Path = TEMPLATES_DIR) -> dict[str, str]:
    """File name -> text of the course module (``<course>.lua``) and its resources (``<course>-resources.yml``)."""
    values = {k: str(v) for k, v in asdict(module).items()}
    values["reservation"] = module.reservation or "none"
    values["reservation_setenv"] = (f'setenv("LUMIKIT_RESERVATION", "{module.reservation}")' if module.reservation
                                    else "-- (no reservation: jobs are submitted without one)")
    out: dict[str, str] = {}
    for name, template in TEMPLATES.items():
        path = templates_dir / template
        lua_values = dict(values)
        if name.endswith(".lua"):
            # Lua expressions, so that ${USER} becomes the learner's own name when the module loads.
            lua_values["hf_home"] = _lua_path(module.hf_home)
            lua_values["torch_home"] = _lua_path(module.torch_home)
        out[name.format(course=module.course)] = fill(path.read_text(), lua_values, source=str(path))
    return out


def write_course_module(module: CourseModule, folder: str | Path, *, force: bool = False) -> list[Path]:
    """Write the rendered files into ``folder``; refuse (writing nothing) if one exists, unless ``force``."""
    files = render_course_module(module)
    folder = Path(folder)
    targets = {folder / name: text for name, text in files.items()}
    existing = [str(p) for p in targets if p.exists()]
    if existing and not force:
        raise LumikitError(f"{', '.join(existing)} already exist(s); choose another folder or pass force=True "
                           "(--force) to replace them")
    return [write_atomic(path, text) for path, text in targets.items()]


def origin_url(repo: Path = TEMPLATES_DIR.parents[2]) -> str | None:
    """The ``origin`` remote of the workbook's clone, the default for ``--git-repo`` (None when there is none)."""
    try:
        done = subprocess.run(["git", "-C", str(repo), "remote", "get-url", "origin"], capture_output=True,
                              text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    url = done.stdout.strip()
    return url if done.returncode == 0 and url else None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m lumikit.ood",
                                     description="Course modules for LUMI's 'Jupyter for Courses' app.",
                                     allow_abbrev=False)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    r = sub.add_parser("render", help="render <course>.lua and <course>-resources.yml into a folder",
                       allow_abbrev=False)
    r.add_argument("--project", help="LUMI project of the course, project_<number>")
    r.add_argument("--reservation", help="the course's Slurm reservation")
    r.add_argument("--no-reservation", action="store_true", help="the course has no reservation")
    r.add_argument("--course", default=DEFAULT_COURSE, help="module name, also the folder the app clones into")
    r.add_argument("--container", help="container name from the site profile, or a .sif path")
    r.add_argument("--venv", help="the course venv (default /projappl/<project>/lumi-workbook/venv)")
    r.add_argument("--git-repo", help="URL the app clones the workbook from (default: this clone's origin)")
    r.add_argument("--git-ref", default="", help="branch, tag or commit the app checks out")
    r.add_argument("--partition", help="default partition (default: the site's)")
    r.add_argument("--cores", type=int, help="default CPU cores (default: the cores of one GCD)")
    r.add_argument("--mem-gb", type=int, help="default memory in GB (default: the memory of one GCD)")
    r.add_argument("--time", default=DEFAULT_TIME, help="default session length, HH:MM:SS")
    r.add_argument("--site", default="lumi", help="site profile (default: lumi)")
    r.add_argument("-o", "--output", required=True, help=f"folder to write into, e.g. {MODULES_DIR}")
    r.add_argument("--force", action="store_true", help="replace files that already exist")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m lumikit.ood render ...``: exit status 0, or 2 with the reason on stderr."""
    args = build_parser().parse_args(argv)
    try:
        module = course_module(
            args.project, args.reservation, course=args.course, container=args.container, venv=args.venv,
            git_repo=args.git_repo or origin_url(), git_ref=args.git_ref, partition=args.partition,
            cores=args.cores, mem_gb=args.mem_gb, time=args.time, no_reservation=args.no_reservation,
            site=args.site)
        written = write_course_module(module, args.output, force=args.force)
    except LumikitError as exc:
        print(f"lumikit.ood: error: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}")
    modules_dir = MODULES_DIR.format(project=module.project)
    if Path(args.output).resolve() != Path(modules_dir):
        print(f"next: copy them into {modules_dir}/ (create it if needed)")
    print(f"then: build the venv with  lumi/setup-venv.sh --project {module.project} --venv {module.venv}")
    print("and in www.lumi.csc.fi: Help -> Restart Web Server, then Jupyter for Courses shows the course")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""LUMI's 2026 route (issue 41): Route 0 in the README and lumi/README.md names the Jupyter app's lumi-multitorch
module, installs lumikit for the user without a venv of its own, launches jobs in the site profile's LAIF images,
and cites its sources, saying "expected" for what was not seen here."""
from __future__ import annotations

from pathlib import Path

from lumikit.site import load_site

REPO = Path(__file__).resolve().parents[2]


def route0(text: str) -> str:
    return text.split("Route 0", 1)[1].split("### Route 1", 1)[0]


def test_route_0_in_both_readmes_names_module_install_jobs_and_sources() -> None:
    for path in (REPO / "README.md", REPO / "lumi" / "README.md"):
        text = route0(path.read_text())
        for needed in ("lumi-multitorch", "Local-LAIF", "pip install --user", "sbatch", "laif-latest",
                       "FI_MR_CACHE_MONITOR=userfaultfd", "LUMI user guide", "May 2026", "LUMI AI Guide",
                       "September 2026", "expected"):
            assert needed in text, (path.name, needed)
        assert "setup-venv.sh" not in text  # no venv of its own


def test_the_images_route_0_names_exist_in_the_site_profile() -> None:
    lumi = load_site("lumi")
    for name in ("laif-pytorch", "laif-latest"):
        assert "laif" in lumi.container(name).job_env

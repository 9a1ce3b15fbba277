"""Installed versions, as a run folder records them and a constraints file pins them."""
from importlib import metadata

from lumikit.packages import installed_versions


def test_installed_versions_keep_the_order_and_leave_out_what_is_absent():
    found = installed_versions(["pandas", "no-such-distribution-xyz", "numpy"])
    assert found == {"pandas": metadata.version("pandas"), "numpy": metadata.version("numpy")}
    assert list(found) == ["pandas", "numpy"]

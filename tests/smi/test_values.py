

def test_a_clock_too_large_for_a_double_is_no_reading() -> None:
    """rocm-smi's ``(1650Mhz)`` cell with 400 digits (found by the fuzz, seed 1397397992): damage, never infinity."""
    from lumikit.smi.rocm_keys import clock

    assert clock("(1650Mhz)") == 1650.0 and clock("1: (400Mhz)") == 400.0
    assert clock("(1" + "0" * 400 + "Mhz)") is None

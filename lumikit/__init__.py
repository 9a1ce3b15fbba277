"""lumikit: the helper package of the LUMI AI workbook."""
__version__ = "0.1.0"

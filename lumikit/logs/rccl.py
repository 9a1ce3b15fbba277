"""Which network RCCL used, from its ``NCCL_DEBUG=INFO`` lines: the aws-ofi-rccl plugin on Slingshot (CXI), or
the slow fall-back to TCP sockets.

On LUMI a healthy multi-node run logs ``NET/OFI Using aws-ofi-rccl <version>`` and
``NET/OFI Selected Provider is cxi``; without the plugin RCCL logs that it found none and uses ``NET/Socket``.
RCCL's own ``Using network <name>`` line says what it settled on, so it decides: a plugin that initialised and
then failed ("Couldn't open a fabric access domain") leaves RCCL on ``Using network Socket``.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Literal

from ..bindings_modules import load_advice
from .text import bound_lines, clean, read_log_text

Transport = Literal["ofi", "socket", "ib", "unknown"]

# Linear patterns (they run over whole logs): repeats bounded, and a gap between two words is A(?:(?!A).){0,N}B.
_PLUGIN = re.compile(r"NET/OFI (?:Using|Initializing) (?P<plugin>aws-ofi-[rn]ccl)(?:\s+(?P<version>[\w.\-]+))?")
_PROVIDER = re.compile(r"NET/OFI Selected [Pp]rovider is (?P<provider>[\w;+\-]+)")
_NETWORK = re.compile(r"Using network (?P<net>[\w ]{1,100}?)\s{0,100}$")
_NO_PLUGIN = re.compile(r"NET/Plugin\s*:?\s*(?:No plugin found|Plugin load (?:(?!Plugin load ).){0,500}returned"
                        r"|Using internal network plugin)"
                        r"|lib[rn]ccl-net\.so: cannot open shared object file")
_SOCKET = re.compile(r"NET/Socket\s*:\s*Using")
_IB = re.compile(r"NET/IB\s*:\s*Using\s*\[")
_WARN = re.compile(r"NCCL WARN")
# A channel whose transport ends in /GDRDMA moves data between GCD memory and the network card directly.
_GDR = re.compile(r"Channel (?:(?!Channel ).){0,500} via NET/(?:(?! via NET/).){0,200}/GDRDMA\s{0,100}$")
_OFI_FAILED = re.compile(r"NET/OFI Couldn't open a fabric access domain"
                         r"|NET/OFI (?:(?!NET/OFI ).){0,500}(?:failed|Failed)")


@dataclass(frozen=True)
class LogLine:
    """A line of a log that supports a conclusion: its number (1-based) and its text."""

    line_no: int
    text: str


@dataclass(frozen=True)
class RcclTransport:
    """What RCCL used for traffic between nodes, and the lines that say so.

    ``transport`` is ``ofi`` (a libfabric plugin), ``socket`` (TCP fall-back), ``ib`` or ``unknown`` (no
    ``NCCL_DEBUG=INFO`` network lines); ``plugin`` e.g. "aws-ofi-rccl 1.4.0"; ``provider`` the libfabric
    provider ("cxi" on LUMI's Slingshot); ``plugin_missing`` when RCCL said it found no network plugin;
    ``ofi_failed`` when the plugin was there but could not open the network; ``network`` what RCCL's
    ``Using network`` line named, which decides the transport when present.
    """

    source: str
    transport: Transport
    plugin: str | None = None
    provider: str | None = None
    plugin_missing: bool = False
    ofi_failed: bool = False
    evidence: tuple[LogLine, ...] = ()
    warnings: tuple[LogLine, ...] = field(default=())
    gdr_lines: tuple[LogLine, ...] = ()
    network: str | None = None  # RCCL's "Using network X" (AWS Libfabric, Socket, IB), when logged

    @property
    def gdr(self) -> bool:
        """True when at least one channel moved data GPU-direct (RDMA from GCD memory)."""
        return bool(self.gdr_lines)

    @property
    def ok(self) -> bool:
        """True when RCCL talks over Slingshot through the plugin (what LUMI needs for multi-node speed)."""
        return self.transport == "ofi" and (self.provider or "").startswith("cxi")

    def describe(self) -> str:
        """One sentence for a notebook or the command line."""
        if self.transport == "ofi":
            via = f" with provider {self.provider}" if self.provider else " (provider not logged)"
            text = f"RCCL uses {self.plugin or 'a libfabric plugin'}{via}"
            text += " and GPU-direct RDMA" if self.gdr else ""
            return text + ("." if self.ok else "; on LUMI the provider should be cxi.")
        if self.transport == "socket":
            if self.ofi_failed:
                return (f"RCCL falls back to TCP sockets: {self.plugin or 'the aws-ofi-rccl plugin'} loaded but "
                        "could not open the Slingshot network (\"Couldn't open a fabric access domain\"), so "
                        "traffic between nodes is slow. Bind the host's libfabric/CXI libraries into the container "
                        f"({load_advice()}); see `lumikit doctor`.")
            return ("RCCL falls back to TCP sockets (no network plugin loaded): slow between nodes. "
                    "Make aws-ofi-rccl visible to the job.")
        if self.transport == "ib":
            return "RCCL uses InfiniBand verbs."
        if self.ofi_failed:
            return ("The aws-ofi-rccl plugin could not open the Slingshot network (see `lumikit doctor`); "
                    "no transport was logged after that.")
        return "No RCCL network lines found (was NCCL_DEBUG=INFO set, and did the job use more than one node?)."


def parse_rccl(text: str, source: str = "<text>") -> RcclTransport:
    """The RCCL transport of a log given as text (see :func:`rccl_transport`)."""
    plugin = provider = network = None
    plugin_missing = socket = ib = ofi_failed = False
    evidence: list[LogLine] = []
    warnings: list[LogLine] = []
    gdr_lines: list[LogLine] = []
    for no, raw in enumerate(bound_lines(text).split("\n"), start=1):
        if "NCCL" not in raw and "NET/" not in raw and "ccl-net" not in raw:
            continue
        line = clean(raw)
        hit = False
        if m := _PLUGIN.search(line):
            plugin = " ".join(p for p in (m.group("plugin"), m.group("version")) if p)
            hit = True
        if m := _PROVIDER.search(line):
            provider = m.group("provider")
            hit = True
        if m := _NETWORK.search(line):
            network = m.group("net")
            hit = True
        if _NO_PLUGIN.search(line):
            plugin_missing = hit = True
        if _SOCKET.search(line):
            socket = hit = True
        if _IB.search(line):
            ib = hit = True
        if _OFI_FAILED.search(line):
            ofi_failed = hit = True
        if _GDR.search(line):
            gdr_lines.append(LogLine(no, line))
        if hit:
            evidence.append(LogLine(no, line))
        if _WARN.search(line):
            warnings.append(LogLine(no, line))
    net = (network or "").lower()
    transport: Transport
    if net:  # RCCL's own "Using network X" decides over what the plugin said while it initialised
        transport = "socket" if net == "socket" else "ib" if net == "ib" else "ofi" if (
            "libfabric" in net or "ofi" in net) else "unknown"
    elif socket and ofi_failed:  # the plugin initialised, failed, and RCCL went on with NET/Socket
        transport = "socket"
    elif plugin or provider:
        transport = "ofi"
    elif ib:
        transport = "ib"
    elif socket or plugin_missing:  # without a plugin and without IB, sockets are all that is left
        transport = "socket"
    else:
        transport = "unknown"
    return RcclTransport(source, transport, plugin, provider, plugin_missing, ofi_failed, tuple(evidence),
                         tuple(warnings), tuple(gdr_lines), network)


def rccl_transport(path: str | os.PathLike[str]) -> RcclTransport:
    """Read a log written with ``NCCL_DEBUG=INFO`` and say which network RCCL used, with the evidence lines."""
    return parse_rccl(read_log_text(path), source=str(path))

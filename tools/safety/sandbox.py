"""Placeholder: replaced by the Landlock sandbox below."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxStatus:
    available: bool
    mechanism: str
    detail: str = ""


def status() -> SandboxStatus:
    return SandboxStatus(available=False, mechanism="none", detail="not sandboxed")

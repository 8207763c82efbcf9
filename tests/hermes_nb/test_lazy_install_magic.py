"""``%%tool --requires`` and ``%tools install`` in a plain shell: the parsing, the switch, the fallbacks."""

from __future__ import annotations

import pytest
import yaml
from IPython.core.error import UsageError

from hermes_nb.tools.registry import registry

CELL = '''def ducky() -> str:
    """Needs a package that is not there."""
    return "quack"
'''


def test_requires_is_repeatable_and_comma_separated(ip):
    ip.run_cell_magic("tool", "--requires 'hnb-no-such-a>=1' --requires hnb-no-such-b,hnb-no-such-c", CELL)
    entry = registry.get_entry("ducky")
    assert entry.requires_packages == ("hnb-no-such-a>=1", "hnb-no-such-b", "hnb-no-such-c")
    assert registry.availability("ducky").missing_packages == entry.requires_packages


def test_a_url_in_requires_is_a_one_line_error(ip):
    with pytest.raises(UsageError, match="URL or a path"):
        ip.run_cell_magic("tool", "--requires 'x @ https://example.com/x.whl'", CELL)
    assert "ducky" not in registry


def test_install_names_a_tool_that_needs_packages(ip):
    ip.run_cell_magic("tool", "", CELL)
    with pytest.raises(UsageError, match="ducky requires no packages"):
        ip.run_line_magic("tools", "install ducky")
    with pytest.raises(UsageError, match="name the tools"):
        ip.run_line_magic("tools", "install")


def test_installs_switched_off(ip, hermes_home):
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"security": {"allow_lazy_installs": False}}))
    ip.run_cell_magic("tool", "--requires hnb-no-such-a", CELL)
    with pytest.raises(UsageError, match=r"installing packages is off \(security: \{allow_lazy_installs: false\}"):
        ip.run_line_magic("tools", "install ducky")
    from hermes_nb.display.installs import install_button

    assert install_button(["ducky"]) is None  # no button offers what is switched off


def test_the_button_falls_back_to_text(ip):
    ip.run_cell_magic("tool", "--requires hnb-no-such-a", CELL)
    from hermes_nb.display.installs import install_button

    button = install_button(["ducky"])
    assert repr(button).startswith("ducky needs packages; to install them: %tools install ducky\n  runs: ")
    assert repr(button).endswith(" hnb-no-such-a")

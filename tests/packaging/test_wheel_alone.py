"""The built wheel alone in a fresh venv, used from a notebook folder that has its own ``tools/`` package,
``model_tools.py`` and ``toolsets.py`` (an editable install would hide a missing module: its finder fills
the gap from the source tree)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.support.venvs import cached_venv, venv_kernel

pytestmark = [pytest.mark.packaging, pytest.mark.kernel, pytest.mark.slow, pytest.mark.timeout(900)]

#: The wheel and a kernel to run it in; nothing else.
STEPS = [["{wheel}", "ipykernel"]]


def _person_folder(root: Path) -> Path:
    """A notebook folder whose owner has their own ``tools`` package and Hermes-like module names."""
    folder = root / "notebooks"
    (folder / "tools").mkdir(parents=True)
    (folder / "tools" / "__init__.py").write_text('MARK = "the person\'s tools"\n')
    (folder / "tools" / "helpers.py").write_text("def shout(text):\n    return text.upper() + '!'\n")
    (folder / "model_tools.py").write_text('MARK = "the person\'s model_tools"\n')
    (folder / "toolsets.py").write_text('MARK = "the person\'s toolsets"\n')
    return folder


def hermes_style_tool_file(home: Path) -> None:
    """``$HERMES_NB_HOME/tools/greeter.py``, written as a Hermes tool file is (Hermes's import path)."""
    (home / "tools").mkdir(parents=True)
    (home / "tools" / "greeter.py").write_text(
        textwrap.dedent(
            """
            from tools.registry import registry, tool_result

            registry.register(
                name="greet", toolset="home-tools",
                schema={"name": "greet", "description": "Greet someone.",
                        "parameters": {"type": "object", "properties": {"who": {"type": "string"}},
                                       "required": ["who"]}},
                handler=lambda args, **kw: tool_result(greeting="hello, " + args["who"]),
            )
            """
        )
    )


def test_wheel_in_a_folder_with_its_own_tools_package(tmp_path):
    venv = cached_venv("wheel-alone", STEPS)
    folder = _person_folder(tmp_path)
    home = tmp_path / "home"
    hermes_style_tool_file(home)
    with venv_kernel(venv, folder, {"HERMES_NB_HOME": str(home)}) as kernel:
        kernel.run("%load_ext hermes_nb")
        kernel.run(
            textwrap.dedent(
                '''
                %%tool --toolset geometry
                def area(width: float, height: float = 1.0) -> dict:
                    """Area of a rectangle.

                    Args:
                        width: The width.
                        height: The height.
                    """
                    return {"area": width * height}
                '''
            ).strip()
        )
        called = kernel.run("%tools call area width=3 height=2")
        assert '"area": 6' in called.text

        # the folder's own modules are the person's, after the extension loaded
        own = kernel.run(
            "import tools, tools.helpers, model_tools, toolsets\n"
            "print(tools.MARK, '|', tools.helpers.shout('hi'), '|', model_tools.MARK, '|', toolsets.MARK)\n"
            "print(tools.__file__)"
        )
        lines = own.stdout.splitlines()
        assert lines[0] == "the person's tools | HI! | the person's model_tools | the person's toolsets"
        assert lines[1] == str(folder / "tools" / "__init__.py")

        # hermes_nb comes from the venv's site-packages, and the Hermes-style tool file in
        # $HERMES_NB_HOME/tools reached hermes_nb's registry in this same kernel
        ours = kernel.run(
            "import hermes_nb\n"
            "from hermes_nb.tools.registry import registry\n"
            "print(hermes_nb.__file__)\n"
            "print(registry.get_entry('greet').source)\n"
            "print(registry.dispatch('greet', {'who': 'Ada'}))"
        )
        where, source, greeting = ours.stdout.splitlines()
        assert Path(where).is_relative_to(venv) and "site-packages" in where
        assert source == "plugin"
        assert greeting == '{"greeting": "hello, Ada"}'

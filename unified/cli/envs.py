"""``unified-eval env list|remove``: the isolated backends' environments
(``unified.adapters.isolated.envs``)."""

from __future__ import annotations

import typer
from rich.table import Table

from unified.cli.common import App, UserError, out_console, user_errors

env_app = App(
    no_args_is_help=True, help="List or remove the environments of isolated backends (ragas@0.3.9, embedchain)."
)


def _size(n: int) -> str:
    return f"{n / 1e6:.0f} MB"


@env_app.command("list")
def env_list_cmd() -> None:
    """Every isolated environment: framework, version asked and installed, Python, size."""
    from unified.adapters.isolated.envs import envs_root, list_envs

    envs = list_envs()
    if not envs:
        out_console.print(f"no isolated environments in {envs_root()}", highlight=False, soft_wrap=True)
        return
    t = Table(title=f"isolated environments in {envs_root()}")
    for col in ("key", "framework", "installed", "python", "size", "built", "build s"):
        t.add_column(col)
    for e in envs:
        t.add_row(
            e["key"],
            str(e.get("framework")),
            str(e.get("installed")),
            str(e.get("python")),
            _size(e["bytes"]),
            str(e.get("created")),
            str(e.get("build_seconds")),
        )
    out_console.print(t)


@env_app.command("build")
def env_build_cmd(
    names: list[str] = typer.Argument(..., help="isolated backends: ragas@0.3.9, deepeval@3.9.9, embedchain"),
) -> None:
    """Build (or find) the environments of isolated backends now, e.g. in a CI image, so
    the first run does not pay for it."""
    from unified.adapters.isolated import RECIPES, split_name
    from unified.adapters.isolated.envs import EnvBuildError, EnvSpec, ensure_env

    with user_errors():
        for name in names:
            split = split_name(name)
            if split is None:
                raise UserError(f"'{name}' is no isolated backend (ragas@VERSION, deepeval@VERSION, embedchain)")
            recipe = RECIPES[split[0]]
            try:
                folder = ensure_env(EnvSpec(recipe.distribution, split[1] or recipe.default_version, recipe.pins))
            except EnvBuildError as e:
                raise UserError(str(e)) from None
            out_console.print(f"{name}: {folder}", highlight=False, soft_wrap=True)


@env_app.command("remove")
def env_remove_cmd(
    keys: list[str] = typer.Argument(..., help="environment keys as `env list` shows them (ragas-0.3.9-py3.11)"),
) -> None:
    """Remove environments; a backend that needs one again rebuilds it (from uv's cache)."""
    from unified.adapters.isolated.envs import remove_env

    with user_errors():
        for key in keys:
            try:
                folder = remove_env(key)
            except KeyError as e:
                raise UserError(str(e.args[0])) from None
            out_console.print(f"removed {folder}", highlight=False, soft_wrap=True)

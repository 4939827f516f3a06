"""Generate the role variable tables from each role's meta/argument_specs.yml.

Writes roles/<role>/README.md (whole file); the top-level README links to them. With --check, changes nothing
and exits 1 when any is out of date.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _cell(value: Any) -> str:
    if isinstance(value, list):
        value = " ".join(str(v) for v in value)
    text = str(value).replace("|", "\\|").replace("\n", " ")
    for marker, md in (("C(", "`"), ("I(", "*"), ("V(", "`"), ("O(", "`")):
        while marker in text:
            start = text.index(marker)
            end = text.find(")", start)
            if end < 0:
                break
            text = text[:start] + md + text[start + 2 : end] + md + text[end + 1 :]
    return text


def _default(option: dict[str, Any]) -> str:
    if "default" not in option:
        return "*required*" if option.get("required") else ""
    value = option["default"]
    if value is None:
        return "`null`"
    rendered = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
    rendered = rendered.removesuffix("...").strip()
    return f"`{_cell(rendered)}`"


def _type(option: dict[str, Any]) -> str:
    kind = option.get("type", "str")
    if kind == "list" and "elements" in option:
        kind = f"list of {option['elements']}"
    if "choices" in option:
        kind += " (" + ", ".join(f"`{c}`" for c in option["choices"]) + ")"
    return kind


def role_table(role: Path, heading: str = "###") -> str:
    specs = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    lines: list[str] = []
    for entry, spec in specs.items():
        title = role.name if entry == "main" else f"{role.name} ({entry})"
        lines += [f"{heading} {title}", "", _cell(spec.get("short_description", "")), ""]
        options = spec.get("options", {})
        if not options:
            lines += ["No variables.", ""]
            continue
        lines += ["| Variable | Type | Default | Description |", "|---|---|---|---|"]
        for name in sorted(options):
            option = options[name]
            lines.append(
                f"| `{name}` | {_type(option)} | {_default(option)} | {_cell(option.get('description', ''))} |"
            )
        lines.append("")
    return "\n".join(lines)


def role_readme(role: Path) -> str:
    specs = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    main = specs.get("main", {})
    description = main.get("description", [])
    if isinstance(description, str):
        description = [description]
    body = [
        f"# gpulab.dlstack.{role.name}",
        "",
        *(_cell(d) for d in description),
        "",
        "<!-- Generated from meta/argument_specs.yml by `nox -s docs`; do not edit. -->",
        "",
        "## Variables",
        "",
        role_table(role, heading="###"),
    ]
    return "\n".join(body).rstrip() + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 when a generated file is out of date")
    parser.add_argument("--role", action="append", help="only these roles (default: every role with argument specs)")
    args = parser.parse_args()
    roles = sorted(p.parent.parent for p in (ROOT / "roles").glob("*/meta/argument_specs.yml"))
    if args.role:
        roles = [role for role in roles if role.name in args.role]
    wanted: dict[Path, str] = {role / "README.md": role_readme(role) for role in roles}
    readme = (ROOT / "README.md").read_text()
    unlinked = [role.name for role in roles if f"(roles/{role.name}/README.md)" not in readme]
    if unlinked and not args.role:
        names = ", ".join(unlinked)
        print(f"README.md: link each role's README from the Documentation section: {names}", file=sys.stderr)
        return 1
    stale = [path for path, content in wanted.items() if not path.exists() or path.read_text() != content]
    if args.check:
        for path in stale:
            print(f"out of date: {path.relative_to(ROOT)} (run `nox -s docs`)", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.write_text(wanted[path])
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

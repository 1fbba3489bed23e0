#!/usr/bin/env python3
"""The flags of `gpucast serve`, as its --help prints them, as a markdown table (stdlib only):
docs/api.md shows every flag, docs/security.md the limits (named on the command line), so that a
flag, default or range the code changes makes `make test` fail until the docs are regenerated.

Usage: tools/docgen/serve_flags.py BUILD/gpucast [--only FLAG ...]
"""
import re
import subprocess
import sys

# "  --name SPEC   description", or the description on the following lines (indented).
OPTION = re.compile(r"^  (?:-\w,)?(--[\w-]+)(?: (.*?))?(?:\s{2,}(\S.*))?$")


def parse(help_text):
    """[(flag, type, range, default, required, description)] in --help's order."""
    flags, cur = [], None
    for line in help_text.splitlines():
        m = OPTION.match(line)
        if m:
            spec = (m[2] or "").strip()
            required = spec.endswith("REQUIRED")
            spec = spec[:-len("REQUIRED")].strip() if required else spec
            spec = re.sub(r"\s*\.\.\.$", "", spec)  # repeatable
            repeat = (m[2] or "").strip().endswith("...")
            default = ""
            if "=" in spec:
                spec, default = spec.split("=", 1)
            rng = ""
            r = re.search(r" in (\[.*\])$", spec)
            if r:
                rng, spec = r[1], spec[:r.start()]
            cur = [m[1], spec.split(":")[0], rng, default, required, m[3] or "", repeat]
            flags.append(cur)
        elif cur is not None and line.startswith(" " * 8) and line.strip():
            cur[5] = (cur[5] + " " + line.strip()).strip()
        elif not line.strip() or not line.startswith(" "):
            cur = None
    return [f for f in flags if f[0] != "--help"]


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    binary, only = args[0], None
    if len(args) > 1:
        if args[1] != "--only":
            sys.exit(__doc__)
        only = args[2:]
    out = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True, check=True).stdout
    flags = parse(out)
    names = [f[0] for f in flags]
    if only:
        missing = [o for o in only if o not in names]
        if missing:
            sys.exit(f"serve_flags.py: gpucast serve --help has no {', '.join(missing)}")
        flags = [f for o in only for f in flags if f[0] == o]
    print("| flag | default | accepted | meaning (`gpucast serve --help`) |")
    print("|---|---|---|---|")
    for name, typ, rng, default, required, desc, repeat in flags:
        shown_default = "required" if required else (f"`{default}`" if default else ("none" if typ else "off"))
        accepted = typ + (f" in {rng}" if rng else "") + (", repeatable" if repeat else "")
        desc = desc.replace("|", "\\|")
        print(f"| `{name}` | {shown_default} | {accepted or 'a flag'} | {desc} |")


if __name__ == "__main__":
    main()

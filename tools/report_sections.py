#!/usr/bin/env python3
"""Keep only some sections of a `gpucast report` page (for a screenshot).

Usage: tools/report_sections.py REPORT.html OUT.html ID_PREFIX...
Writes the page's head and title, then every <h2 id=...> section whose id starts
with one of the prefixes (up to the next <h2>), in page order. Exits 1 naming
a prefix that matched no section.
"""
import re, sys

src, dst, prefixes = sys.argv[1], sys.argv[2], sys.argv[3:]
if not prefixes:
    sys.exit("usage: report_sections.py REPORT.html OUT.html ID_PREFIX...")
page = open(src, encoding="utf-8").read()
body = page.index("<body>") + len("<body>")
starts = [m.start() for m in re.finditer(r"<h2[ >]", page)]
ends = starts[1:] + [page.index("</body>")]
keep, hit = [], set()
for a, b in zip(starts, ends):
    m = re.match(r"<h2 id='([^']*)'", page[a:])
    for p in prefixes:
        if m and m.group(1).startswith(p):
            keep.append(page[a:b])
            hit.add(p)
            break
missing = [p for p in prefixes if p not in hit]
if missing:
    sys.exit(f"{src}: no section with an id starting with {', '.join(missing)}")
title = page[body:page.index("<h2")]  # the title and the run's description
with open(dst, "w", encoding="utf-8") as f:
    f.write(page[:body] + title + "".join(keep) + "</body></html>\n")

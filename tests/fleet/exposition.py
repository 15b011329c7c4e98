"""The Prometheus text exposition, read just enough to sum a metric's
samples, optionally filtered by label values."""

import re

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def samples(text):
    """(name, {label: value}, value) of every sample line."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if m:
            out.append((m.group(1), dict(LABEL.findall(m.group(2) or "")), float(m.group(3))))
    return out


def total(text, name, **labels):
    """Sum of `name`'s samples whose labels include `labels`."""
    return sum(v for n, ls, v in samples(text)
               if n == name and all(ls.get(k) == want for k, want in labels.items()))

"""CPU seconds and peak RSS of a component over all its process lifetimes
(a killed process's numbers are taken just before the kill)."""

from harness import bench_builds, packaged


class Usage:
    def __init__(self):
        self.cpu_s_ended = 0.0      # lifetimes that are over
        self.peak_rss_kib = 0

    def note_final(self, proc):
        """The last numbers of `proc`, which is about to end."""
        cpu, rss = self._sample(proc)
        self.cpu_s_ended += cpu
        self.peak_rss_kib = max(self.peak_rss_kib, rss)

    def total(self, live=None):
        """(CPU seconds, peak RSS KiB) so far, the live process `live`
        included."""
        cpu, rss = self._sample(live) if live is not None and live.running() else (0.0, 0)
        return self.cpu_s_ended + cpu, max(self.peak_rss_kib, rss)

    @staticmethod
    def _sample(proc):
        try:
            cpu, _ = bench_builds.proc_stats(proc.collector_pid())
        except (OSError, TypeError):
            return 0.0, 0
        return cpu, packaged.peak_rss_kib(proc) or 0

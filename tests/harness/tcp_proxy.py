"""A TCP proxy on 127.0.0.1 that a test can cut and restore, to make a
backend unreachable for a while without restarting it (a restarted Jaeger
would come back with its in-memory storage empty).

While cut, every open connection is reset and every new one is accepted
and reset at once (SO_LINGER 0), so a client sees what it sees of a
backend that went away: a broken stream, then failing connects. The
listening socket stays bound throughout, so the port cannot be taken by
another process meanwhile. Byte counts are kept per direction.
`ProxyProcess` runs one in a process of its own, driven by signals.

    with TcpProxy(("127.0.0.1", jaeger_port)) as proxy:
        ... point the exporter at proxy.endpoint ...
        proxy.cut(); time.sleep(30); proxy.restore()
"""

import argparse
import collections
import json
import os
import queue
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

BUFFER_BYTES = 256 * 1024
# How long connect() to the upstream may take before the client is reset.
CONNECT_TIMEOUT_S = 5.0


def _reset(sock):
    """Close with an RST instead of a FIN: the peer's next read fails."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


class TcpProxy:
    def __init__(self, upstream, port=0):
        self.upstream = tuple(upstream)
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", port))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._pairs = set()       # (client, upstream) sockets of open connections
        self._ended = {}          # pair -> directions that ended (0..2)
        self._cut = False
        self._stopped = False
        self.bytes_up = 0         # client -> upstream
        self.bytes_down = 0       # upstream -> client
        self.connections = 0      # accepted while not cut
        self.refused = 0          # accepted and reset while cut
        self._acceptor = threading.Thread(target=self._accept_loop, name=f"tcp-proxy-{self.port}", daemon=True)

    @property
    def endpoint(self):
        return f"127.0.0.1:{self.port}"

    def start(self):
        self._listener.listen(64)
        self._acceptor.start()
        return self

    def cut(self):
        """Reset every open connection; refuse new ones until restore()."""
        with self._lock:
            self._cut = True
            pairs, self._pairs = self._pairs, set()
        for client, server in pairs:
            _reset(client)
            _reset(server)

    def restore(self):
        with self._lock:
            self._cut = False

    def is_cut(self):
        with self._lock:
            return self._cut

    def stop(self):
        with self._lock:
            self._stopped = True
        self.cut()
        try:
            self._listener.close()
        except OSError:
            pass
        if self._acceptor.is_alive():
            self._acceptor.join(timeout=5)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _accept_loop(self):
        # accept() wakes up at least once a second, so stop() is noticed.
        self._listener.settimeout(1.0)
        while True:
            with self._lock:
                if self._stopped:
                    return
            try:
                client, _ = self._listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return  # the listener was closed
            client.settimeout(None)
            with self._lock:
                cut = self._cut or self._stopped
                if cut:
                    self.refused += 1
            if cut:
                _reset(client)
                continue
            threading.Thread(target=self._connect, args=(client,), daemon=True).start()

    def _connect(self, client):
        try:
            server = socket.create_connection(self.upstream, timeout=CONNECT_TIMEOUT_S)
            server.settimeout(None)
        except OSError:
            _reset(client)
            return
        with self._lock:
            if self._cut or self._stopped:
                self.refused += 1
                _reset(client)
                _reset(server)
                return
            self._pairs.add((client, server))
            self.connections += 1
        pair = (client, server)
        threading.Thread(target=self._pump, args=(client, server, "up", pair), daemon=True).start()
        threading.Thread(target=self._pump, args=(server, client, "down", pair), daemon=True).start()

    def _pump(self, src, dst, direction, pair):
        try:
            while True:
                data = src.recv(BUFFER_BYTES)
                if not data:
                    break
                dst.sendall(data)
                with self._lock:
                    if direction == "up":
                        self.bytes_up += len(data)
                    else:
                        self.bytes_down += len(data)
            # An orderly end of this direction: pass the half-close on and
            # let the other direction finish.
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            # Reset by cut() or by a peer: the whole connection is over.
            for sock in pair:
                _reset(sock)
        with self._lock:
            self._ended[pair] = self._ended.get(pair, 0) + 1
            done = self._ended[pair] == 2
            if done:
                del self._ended[pair]
                self._pairs.discard(pair)
        if done:
            for sock in pair:
                try:
                    sock.close()
                except OSError:
                    pass


class ProxyProcess:
    """A TcpProxy in a process of its own (`python -m harness.tcp_proxy`),
    so the bytes it moves never wait for the test's interpreter. cut() and
    restore() are SIGUSR1 and SIGUSR2, each confirmed on its stdout; stop()
    returns the proxy's counts."""

    def __init__(self, upstream, python=sys.executable):
        self.upstream = tuple(upstream)
        self._python = python
        self.proc = None
        self.port = None
        self._lines = queue.Queue()

    @property
    def endpoint(self):
        return f"127.0.0.1:{self.port}"

    def start(self, timeout=30):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self.proc = subprocess.Popen(
            [self._python, "-m", "harness.tcp_proxy", "--upstream", f"{self.upstream[0]}:{self.upstream[1]}"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True, env=env, start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()
        self.port = int(self._expect("listening", timeout).split()[1])
        return self

    def _read(self):
        for line in self.proc.stdout:
            self._lines.put(line.strip())
        self._lines.put(None)

    def _expect(self, word, timeout):
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"tcp proxy: no {word!r} within {timeout} s") from None
        if line is None or not line.startswith(word):
            raise AssertionError(f"tcp proxy: want {word!r}, got {line!r} (exit {self.proc.poll()})")
        return line

    def cut(self, timeout=10):
        self.proc.send_signal(signal.SIGUSR1)
        self._expect("cut", timeout)

    def restore(self, timeout=10):
        self.proc.send_signal(signal.SIGUSR2)
        self._expect("restored", timeout)

    def stop(self, timeout=10):
        """Ends the proxy; its counts ({} if it had not started)."""
        if self.proc is None or self.proc.poll() is not None:
            return {}
        self.proc.send_signal(signal.SIGTERM)
        try:
            stats = json.loads(self._expect("stats", timeout).split(None, 1)[1])
        except AssertionError:
            stats = {}
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=timeout)
        return stats


def main():
    ap = argparse.ArgumentParser(description="a TCP proxy on 127.0.0.1: SIGUSR1 cuts it, SIGUSR2 restores it")
    ap.add_argument("--upstream", required=True, help="HOST:PORT")
    ap.add_argument("--port", type=int, default=0)
    a = ap.parse_args()
    host, port = a.upstream.rsplit(":", 1)
    proxy = TcpProxy((host, int(port)), a.port).start()
    # The handlers only note the request (a deque's append is safe there,
    # a lock is not); the loop below acts and answers on stdout, in order.
    wanted = collections.deque()
    signal.signal(signal.SIGUSR1, lambda *_: wanted.append("cut"))
    signal.signal(signal.SIGUSR2, lambda *_: wanted.append("restore"))
    signal.signal(signal.SIGTERM, lambda *_: wanted.append("stop"))
    print(f"listening {proxy.port}", flush=True)
    while True:
        if not wanted:
            time.sleep(0.05)
            continue
        what = wanted.popleft()
        if what == "cut":
            proxy.cut()
            print("cut", flush=True)
        elif what == "restore":
            proxy.restore()
            print("restored", flush=True)
        else:
            proxy.stop()
            stats = {"bytes_up": proxy.bytes_up, "bytes_down": proxy.bytes_down,
                     "connections": proxy.connections, "refused": proxy.refused}
            print(f"stats {json.dumps(stats)}", flush=True)
            return


if __name__ == "__main__":
    main()

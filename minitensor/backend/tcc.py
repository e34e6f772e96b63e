"""tcc: the text tier 0's compiler starts a build with (tiers.py: tcc compiles a new program's kernels; its link:
linking.py).

    preprocessed_headers(cc)  PRELUDE's system headers as tcc's preprocessor leaves them, to start a build with
    built(cc, with_headers)   a build noted: the second one without the text starts making it
    start_headers()           start making that text for every compiler whose builds went without it

PRELUDE's system headers: tcc preprocesses them in every compile, half its time (13 KB: 8.9 -> 4.1 ms, Zen 4). A tcc
build starts with their text preprocessed (`tcc -E -dD`: the #include lines then meet guards; the same objects and
keys), made on a background thread at a process's first build (builds until then read the headers) and kept on
disk per compiler binary with the stamps of the files it was read from (a changed header makes it anew).
"""
from __future__ import annotations
import contextlib
import os
import re
import threading
from minitensor.backend import diskcache, spawn

INLINED_HEADERS = ("math.h", "stdint.h", "fenv.h")
_headers: dict[str, str] = {}                      # compiler -> its text ("": none, the build reads the headers)
_preprocessing: dict[str, threading.Thread] = {}   # compiler -> the thread making its text (this process's)
_wanted: set[str] = set()                          # compilers whose builds lacked the text, not yet started
_MARKER = re.compile(r'^# \d+ "(/[^"]+)"', re.M)
HEADERS_TIMEOUT = 30.0                             # seconds for `tcc -E` of the headers (it takes milliseconds)


def preprocessed_headers(cc: str, start: bool = True) -> str:
  """INLINED_HEADERS preprocessed by cc when it is tcc and the text is ready, followed by a line marker of kernel.c;
  else "" (the build reads the headers itself), having started the thread that makes it when `start`. A build asks
  without starting it: the build's compiler is then `wanted`, and the text is made once the realization that built
  ends (start_headers) or at that compiler's next build, whichever comes first. (Beside a process's first build
  the thread's work, about 3 ms of Python on the -E output, delayed the first result by as much.)"""
  if (text := _headers.get(cc)) is not None: return text
  if "tcc" not in os.path.basename(os.path.realpath(diskcache.which(cc) or cc)):   # (another compiler: nothing to do)
    _headers[cc] = ""
    return ""
  entry = _headers_entry(cc)
  if entry is not None and (data := diskcache.read_private(entry)) is not None and (text := _valid_headers(data)):
    _headers[cc] = text
    return text
  if start and cc not in _preprocessing:      # (a forked child starts its own: _reset_after_fork)
    t = _preprocessing[cc] = threading.Thread(target=_make_headers, args=(cc, entry), daemon=True,
                                              name="minitensor-headers")
    try: t.start()
    except RuntimeError: _headers[cc] = ""     # (no new thread at interpreter shutdown: builds read the headers)
  return ""


def built(cc: str, with_headers: bool) -> None:
  """Note a build by cc that started with the header text or without it: a second build without it starts making
  it at once (the first leaves that for after its realization, start_headers)."""
  if with_headers: return
  if cc in _wanted: preprocessed_headers(cc)
  else: _wanted.add(cc)


def start_headers() -> None:
  """Start making every `wanted` compiler's header text (realize calls this when a program's first run is done)."""
  while _wanted: preprocessed_headers(_wanted.pop())


def _headers_entry(cc: str) -> str | None:
  if (stamp := diskcache.stamp(diskcache.which(cc) or cc)) is None: return None
  key = diskcache.sha256(f"headers {diskcache.VERSION} {stamp} {INLINED_HEADERS}".encode()).hexdigest()[:32]
  return os.path.join(diskcache.entry_dir(key), key + ".h")


def _make_headers(cc: str, entry: str | None) -> None:
  """The background half of preprocessed_headers: the text made (when cc is tcc) and kept. Ctrl-C is blocked here
  (delivered to this thread, the main one waiting on a compiler's pipes would not see it until the compiler ends)."""
  text = ""
  try:
    import _signal  # (signal's C half: `import signal` costs about 1.3 ms, its constants made enums)
    if hasattr(_signal, "pthread_sigmask"): _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT})
    if entry is not None:
      with diskcache.build_dir(os.path.dirname(entry)) as work: text = _preprocess(cc, work)
      if text and (files := sorted(set(_MARKER.findall(text)))):
        head = "\n".join(f"{f}\t{diskcache.stamp(f)}" for f in files)
        with contextlib.suppress(OSError): diskcache.install(entry, f"{len(files)}\n{head}\n{text}".encode())
  except Exception: text = ""              # noqa: BLE001  (without the text, builds read the headers themselves)
  finally: _headers[cc] = text


def _valid_headers(data: bytes) -> str | None:
  """The kept text of an entry whose header files all still have the stamps it lists, else None (also for an entry
  cut short: the text ends with its line marker of kernel.c)."""
  try:
    n, rest = data.decode().split("\n", 1)
    lines = rest.split("\n", int(n))
    if any(diskcache.stamp(f) != st for f, st in (line.split("\t") for line in lines[:int(n)])): return None
    return text if (text := lines[int(n)]).endswith('\n# 1 "kernel.c"\n') else None
  except (ValueError, UnicodeDecodeError, IndexError): return None


def _preprocess(cc: str, work: str) -> str:
  """tcc -E -dD of INLINED_HEADERS less the predefined macros (redefined, they warn); `##`, printed as a token number
  (`<a6>` in 0.9.27), put back as a probe macro shows it; "" with another unprintable token."""
  with open(headers := os.path.join(work, "headers.c"), "w") as f:
    f.write("".join(f"#include <{h}>\n" for h in INLINED_HEADERS) + "#define MT_PASTE_PROBE(a, b) a ## b\n")
  try: p = spawn.run([cc, "-E", "-dD", headers], HEADERS_TIMEOUT, os.path.join(work, ""))
  except (OSError, spawn.Timeout): return ""
  if p.returncode != 0 or "#define __TINYC__" not in p.stdout: return ""      # (another compiler named tcc)
  probe = re.search(r"^#define MT_PASTE_PROBE\(a, ?b\) a ?(\S+?) ?b$", p.stdout, re.M)
  if probe is None: return ""
  lines, skip, paste = [], False, probe.group(1)
  for line in p.stdout.splitlines():
    if line.startswith('# 1 "<command line>"'): skip = True
    elif skip and line.startswith("# ") and '"<command line>"' not in line: skip = False
    if not skip and not line.startswith("#define MT_PASTE_PROBE"):
      lines.append(line.replace(paste, " ## ") if line.startswith("#define") and paste != "##" else line)
  text = "\n".join(lines)
  return "" if re.search(r"<[0-9a-f]{2}>", text) else text + '\n# 1 "kernel.c"\n'


def _reset_after_fork() -> None:
  _preprocessing.clear()                  # (threads do not survive a fork: a child makes tcc's headers anew)
  _wanted.clear()


os.register_at_fork(after_in_child=_reset_after_fork)

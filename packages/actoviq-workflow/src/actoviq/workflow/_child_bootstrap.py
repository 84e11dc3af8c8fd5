"""Child side of the workflow protocol: ``python -I -S -B -c <this file> <config JSON>``.

This file is never imported by the host: its text is passed to a fresh interpreter (isolated mode,
no ``site``, no bytecode, empty environment). It depends on the standard library only. Order:

1. apply the kernel layers the host describes (private mounts, uid, no-new-privs, Landlock,
   seccomp), then rlimits to itself (CPU, address space, open files, processes, file size, no core
   dumps);
2. move the protocol onto private descriptors (fd 0 becomes ``/dev/null``, fd 1 joins stderr, so
   ``print`` output is bounded diagnostics and cannot forge protocol lines by accident);
3. read exactly one ``workflow.execute`` request (bounded by ``maxMessageBytes``);
4. import asyncio and create the event loop (which needs a socketpair) *before* the deny list;
5. disarm ``_posixsubprocess.fork_exec``, drop dangerous modules from ``sys.modules`` and install
   the audit hook (network, processes, signals to others, ctypes, introspection that could reach
   the hook, and file access outside the workspace);
6. run ``main(context)`` and answer with one JSON-RPC result or error, then ``os._exit``.

The audit hook is defence in depth, not a boundary: CPython's own documentation says audit hooks
cannot stop a determined attacker. The hook keeps its state in default arguments bound to C
functions so that monkeypatching ``os.path`` or ``builtins`` does not switch it off.
"""
# pyright: reportUnknownVariableType=false, reportUnknownMemberType=false
# pyright: reportUnknownArgumentType=false, reportUnknownLambdaType=false
# pyright: reportMissingParameterType=false, reportUnknownParameterType=false

import sys


def _bootstrap() -> None:
    import errno
    import json
    import os
    import resource
    import stat

    parent = os.getppid()  # the host (bubblewrap's init inside its PID namespace)

    config = json.loads(sys.argv[1])
    limits = config["resourceLimits"]
    workspace = config["workspaceDir"]
    max_message = config["maxMessageBytes"]
    use_audit_hook = config["auditHook"]
    max_chars = 2048

    # 1. kernel layers (mounts, uid, no_new_privs, Landlock, seccomp): apply_kernel_layers comes
    # from _child_kernel.py, prepended to this program. A failure ends the child before it reads
    # the request: the host reports the exit with this message as a protocol error.
    sandbox = config.get("sandbox")
    if sandbox is not None:
        try:
            apply_kernel_layers(sandbox)  # noqa: F821  # pyright: ignore[reportUndefinedVariable]
        except OSError as error:
            sys.stderr.write(f"workflow sandbox setup failed: {error}\n")
            sys.stderr.flush()
            os._exit(4)
    # A host that crashes or is killed takes the child with it (after the uid switch above).
    try:
        die_with_parent(parent)  # noqa: F821  # pyright: ignore[reportUndefinedVariable]
    except OSError:
        os._exit(4)
    # Nothing the host passed for the setup (bubblewrap's user namespace descriptor, ...) stays
    # open for the script: only stdin, stdout and stderr survive (close_range).
    os.closerange(3, 2**31 - 1)

    # 1b. rlimits (soft = hard; CPU gets one second of grace so SIGXCPU arrives before SIGKILL).
    # After the uid switch: a low RLIMIT_NPROC in force at setuid time would make the kernel
    # flag the process and fail a later execve with EAGAIN depending on how many other processes
    # the sandbox uid has; set afterwards, the limit binds fork/clone only, deterministically.
    def cap(which, soft, hard):
        _, current_hard = resource.getrlimit(which)
        if current_hard != resource.RLIM_INFINITY:
            soft = min(soft, current_hard)
            hard = min(hard, current_hard)
        resource.setrlimit(which, (soft, hard))

    cap(resource.RLIMIT_CORE, 0, 0)
    cap(resource.RLIMIT_CPU, limits["cpuSeconds"], limits["cpuSeconds"] + 1)
    cap(resource.RLIMIT_AS, limits["addressSpaceBytes"], limits["addressSpaceBytes"])
    cap(resource.RLIMIT_NOFILE, limits["openFiles"], limits["openFiles"])
    cap(resource.RLIMIT_NPROC, limits["maxProcesses"], limits["maxProcesses"])
    cap(resource.RLIMIT_FSIZE, limits["fileSizeBytes"], limits["fileSizeBytes"])

    # 2. private protocol descriptors.
    proto_in = os.dup(0)
    proto_out = os.dup(1)
    null_fd = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null_fd, 0)
    os.close(null_fd)
    os.dup2(2, 1)

    pending = bytearray()

    class ChildLimitError(Exception):
        def __init__(self, code, message):
            super().__init__(message)
            self.code = code

    class CapabilityCallError(Exception):
        """A capability call was refused or failed on the host."""

        def __init__(self, code, message):
            super().__init__(message)
            self.code = code

    def read_line():
        while True:
            index = pending.find(b"\n")
            if index >= 0:
                line = bytes(pending[:index])
                del pending[: index + 1]
                return line.rstrip(b"\r")
            if len(pending) > max_message:
                raise ChildLimitError(
                    "WORKFLOW_MESSAGE_LIMIT_EXCEEDED",
                    f"Workflow host message exceeded the {max_message}-byte limit.",
                )
            chunk = os.read(proto_in, 65536)
            if not chunk:
                raise EOFError("Workflow host closed the protocol.")
            pending.extend(chunk)

    def write_line(message):
        data = json.dumps(message, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        raw = data.encode("utf-8")
        if len(raw) > max_message:
            raise ChildLimitError(
                "WORKFLOW_MESSAGE_LIMIT_EXCEEDED",
                f"Workflow message exceeded the {max_message}-byte limit.",
            )
        view = memoryview(raw + b"\n")
        while view:
            written = os.write(proto_out, view)
            view = view[written:]

    # 3. the one execute request.
    request = json.loads(read_line())
    if request.get("jsonrpc") != "2.0" or request.get("method") != "workflow.execute":
        os._exit(3)
    params = request["params"]
    source = params["source"]
    max_output = params["maxOutputBytes"]

    def find_violation(value):
        stack = [(value, 0)]
        ancestors = set()
        while stack:
            current, leaving = stack.pop()
            kind = type(current)
            if leaving:
                ancestors.discard(id(current))
                continue
            if current is None or kind in (str, int, bool):
                continue
            if kind is float:
                if current != current or current in (float("inf"), float("-inf")):
                    return "a non-finite number"
                continue
            if kind is dict or kind is list:
                if id(current) in ancestors:
                    return "a cycle"
                ancestors.add(id(current))
                stack.append((current, 1))
                if kind is dict:
                    for key, child in current.items():
                        if type(key) is not str:
                            return "a non-string key"
                        stack.append((child, 0))
                else:
                    stack.extend((child, 0) for child in current)
                continue
            return f"a {kind.__name__}"
        return None

    # 4. the event loop needs a socketpair, so it exists before the deny list.
    import asyncio
    import builtins
    import inspect

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)

    class WorkflowSandboxDenied(PermissionError):
        """Raised by the audit hook; ``event`` names the refused operation."""

        def __init__(self, event):
            super().__init__(f"Workflow sandbox denied {event}.")
            self.event = event

    denials = []

    if use_audit_hook:
        # 5a. disarm the fork_exec that asyncio's import of subprocess already loaded.
        posix_sub = sys.modules.get("_posixsubprocess")
        if posix_sub is not None:
            original = posix_sub.fork_exec

            def fork_exec_denied(*_args, **_kwargs):
                denials.append("subprocess")
                raise WorkflowSandboxDenied("subprocess")

            for module in list(sys.modules.values()):
                namespace = getattr(module, "__dict__", None)
                if not isinstance(namespace, dict):
                    continue
                for key, value in list(namespace.items()):
                    if value is original:
                        namespace[key] = fork_exec_denied
        denied_modules = frozenset(
            {
                "_ctypes",
                "_multiprocessing",
                "_posixshmem",
                "_posixsubprocess",
                "_socket",
                "_ssl",
                "_xxsubinterpreters",
                "ctypes",
                "multiprocessing",
                "pty",
                "resource",
                "socket",
                "ssl",
                "subprocess",
            }
        )
        for name in list(sys.modules):
            if name.partition(".")[0] in denied_modules:
                del sys.modules[name]

        def resolve(
            path,
            _lstat=os.lstat,
            _readlink=os.readlink,
            _getcwd=os.getcwd,
            _islink=stat.S_ISLNK,
            _list=list,
            _reversed=reversed,
        ):
            if not path.startswith("/"):
                path = _getcwd() + "/" + path
            resolved = []
            todo = _list(_reversed(path.split("/")))
            hops = 0
            while todo:
                part = todo.pop()
                if part in ("", "."):
                    continue
                if part == "..":
                    if resolved:
                        resolved.pop()
                    continue
                candidate = "/" + "/".join([*resolved, part])
                try:
                    mode = _lstat(candidate).st_mode
                except OSError:
                    resolved.append(part)
                    continue
                if _islink(mode):
                    hops += 1
                    if hops > 40:
                        return None
                    target = _readlink(candidate)
                    if target.startswith("/"):
                        resolved = []
                    todo.extend(_reversed(target.split("/")))
                    continue
                resolved.append(part)
            return "/" + "/".join(resolved)

        read_roots = tuple(
            root
            for root in (resolve(entry) for entry in sys.path if entry.startswith("/"))
            if root is not None and root != "/"
        )
        # 5b. the hook. Everything it uses is bound here, as C functions or immutable values.
        path_read_events = frozenset({"os.listdir", "os.scandir", "os.listxattr", "os.getxattr"})
        path_write_events = frozenset(
            {
                "os.chdir",
                "os.chflags",
                "os.chmod",
                "os.chown",
                "os.lchflags",
                "os.mkdir",
                "os.remove",
                "os.removexattr",
                "os.rmdir",
                "os.setxattr",
                "os.truncate",
                "os.utime",
            }
        )
        two_path_events = frozenset({"os.rename", "os.link"})
        always_denied = frozenset(
            {
                "_thread.start_new_thread",
                "gc.get_objects",
                "gc.get_referents",
                "gc.get_referrers",
                "os.add_dll_directory",
                "os.exec",
                "os.fork",
                "os.forkpty",
                "os.kill",
                "os.killpg",
                "os.posix_spawn",
                "os.spawn",
                "os.startfile",
                "os.system",
                "signal.pthread_kill",
                "subprocess.Popen",
                "sys._current_frames",
            }
        )
        denied_prefixes = ("socket.", "ctypes.", "_winapi.", "winreg.", "msvcrt.")
        protected_attributes = frozenset({"__code__", "__defaults__", "__kwdefaults__"})
        write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
        devices = frozenset({"/dev/null", "/dev/urandom", "/dev/random", "/dev/zero"})

        workspace_prefix = workspace.rstrip("/") + "/"
        root_prefixes = tuple(root + "/" for root in read_roots)

        def hook(
            event,
            args,
            _denials=denials,
            _denied=WorkflowSandboxDenied,
            _always=always_denied,
            _prefixes=denied_prefixes,
            _modules=denied_modules,
            _reads=path_read_events,
            _writes=path_write_events,
            _pairs=two_path_events,
            _protected=protected_attributes,
            _write_flags=write_flags,
            _devices=devices,
            _workspace=workspace,
            _workspace_prefix=workspace_prefix,
            _roots=root_prefixes,
            _resolve=resolve,
            _fspath=os.fspath,
            _fsdecode=os.fsdecode,
            _stat=os.stat,
            _isreg=stat.S_ISREG,
            _isdir=stat.S_ISDIR,
            _type=type,
            _str=str,
            _int=int,
            _len=len,
        ):
            def deny(what):
                _denials.append(what)
                raise _denied(what)

            if event in _always or event.startswith(_prefixes):
                deny(event)
            if event == "import":
                # args: (name, filename or None, ...). Every dotted part is checked (an extension
                # module can be loaded as "pkg.<denied>"), and so is the file an extension module
                # comes from: a denied module's file under another name, or a shared object
                # outside the interpreter's own directories (e.g. one written to the workspace).
                name = args[0]
                if _type(name) is _str:
                    for part in name.split("."):
                        if part in _modules:
                            deny(f"import {name}")
                filename = args[1] if _len(args) > 1 else None
                if _type(filename) is _str and filename:
                    stem = filename.rpartition("/")[2].partition(".")[0]
                    if stem in _modules:
                        deny(f"import {name} from {filename}")
                    real = _resolve(filename) or ""
                    if not real.startswith(_roots):
                        deny(f"import {name} from {filename}")
                return
            if event == "object.__setattr__":
                if args[1] in _protected:
                    deny(f"set {args[1]}")
                return
            if event == "open":
                write = False
                mode = args[1]
                flags = args[2] if _len(args) > 2 else None
                if _type(mode) is _str:
                    write = "w" in mode or "a" in mode or "x" in mode or "+" in mode
                if _type(flags) is _int and flags & _write_flags:
                    write = True
                paths = (args[0],)
            elif event in _reads:
                write = False
                paths = (args[0],)
            elif event in _writes:
                write = True
                paths = (args[0],)
            elif event in _pairs:
                write = True
                paths = (args[0], args[1])
            elif event == "os.symlink":
                write = True
                paths = (args[1],)
            else:
                return
            for raw in paths:
                if raw is None or _type(raw) is _int:
                    continue  # an already-open descriptor this process was given
                path = _fspath(raw)
                if _type(path) is not _str:
                    path = _fsdecode(path)
                real = _resolve(path) or ""  # "" (a symlink loop) matches nothing: denied
                if real == _workspace or real.startswith(_workspace_prefix):
                    try:
                        mode_bits = _stat(real).st_mode
                    except OSError:
                        continue  # does not exist yet: creating it is fine
                    if not (_isreg(mode_bits) or _isdir(mode_bits)):
                        deny(f"{event} {path}")
                    continue
                if real == "/dev/null" or (
                    not write and (real in _devices or real.startswith(_roots))
                ):
                    continue
                deny(f"{event} {path}")
            return

        sys.addaudithook(hook)
        del hook, resolve

    # 6. run the script. These errnos are how the kernel layers refuse: EPERM (seccomp, uid),
    # EACCES (Landlock, file permissions), EROFS (read-only mounts), EXDEV (Landlock refusing to
    # link or rename a file into the workspace from elsewhere).
    kernel_denials = (errno.EPERM, errno.EACCES, errno.EROFS, errno.EXDEV)
    granted = params["capabilities"]
    counter = [0]

    def make_capability(name):
        async def call(value=None):
            counter[0] += 1
            call_id = f"capability:{counter[0]}"
            write_line(
                {
                    "jsonrpc": "2.0",
                    "id": call_id,
                    "method": "capability.call",
                    "params": {"name": name, "input": value},
                }
            )
            reply = json.loads(read_line())
            if reply.get("id") != call_id:
                raise CapabilityCallError("WORKFLOW_PROTOCOL_ERROR", "Unexpected reply id.")
            if "error" in reply:
                error = reply["error"]
                raise CapabilityCallError(error.get("code"), error.get("message"))
            return reply.get("result")

        return call

    context = {
        "input": params["input"],
        "capabilities": {name: make_capability(name) for name in granted},
    }

    def answer(payload):
        write_line({"jsonrpc": "2.0", "id": "workflow:execute", **payload})

    def error_payload(code, message, data=None):
        error = {"code": code, "message": str(message)[:max_chars]}
        if data is not None:
            error["data"] = data
        return {"error": error}

    try:
        namespace = {"__name__": "__workflow__", "__builtins__": builtins}
        exec(compile(source, "<workflow>", "exec"), namespace)
        main = namespace.get("main")
        if not callable(main):
            raise TypeError("Workflow source must define main(context).")
        outcome = main(context)
        if inspect.isawaitable(outcome):

            async def settle(awaitable):
                return await awaitable

            outcome = loop.run_until_complete(settle(outcome))
        problem = find_violation(outcome)
        if problem is not None:
            payload = error_payload(
                "WORKFLOW_EXECUTION_FAILED",
                f"Workflow output is not JSON serializable: it contains {problem}.",
            )
        else:
            encoded = json.dumps(outcome, separators=(",", ":"), ensure_ascii=False)
            if len(encoded.encode("utf-8")) > max_output:
                payload = error_payload(
                    "WORKFLOW_OUTPUT_LIMIT_EXCEEDED",
                    f"Workflow output exceeded the {max_output}-byte limit.",
                )
            else:
                payload = {"result": outcome}
    except BaseException as error:  # the script may raise anything, SystemExit included
        try:
            denied = None
            link = error
            try:
                for _ in range(16):
                    if link is None:
                        break
                    if isinstance(link, WorkflowSandboxDenied):
                        denied = link
                        break
                    link = link.__cause__ or link.__context__
            except BaseException:  # a script's exception may make even its attributes raise
                pass
            if denied is not None:
                payload = error_payload(
                    "WORKFLOW_PERMISSION_DENIED",
                    str(denied),
                    {"operation": denied.event, "layer": "audit-hook"},
                )
            elif isinstance(error, OSError) and error.errno == errno.EFBIG:
                payload = error_payload(
                    "WORKFLOW_RESOURCE_LIMIT_EXCEEDED",
                    "Workflow exceeded its file size limit (EFBIG).",
                    {"resource": "fileSize"},
                )
            elif (
                isinstance(error, BlockingIOError)
                and error.errno == errno.EAGAIN
                and error.filename is None
            ):
                payload = error_payload(
                    "WORKFLOW_RESOURCE_LIMIT_EXCEEDED",
                    "Workflow hit its process limit (RLIMIT_NPROC: fork/clone failed with EAGAIN).",
                    {"resource": "processes"},
                )
            elif isinstance(error, OSError) and error.errno in kernel_denials:
                name = errno.errorcode.get(error.errno, str(error.errno))
                target = error.filename
                operation = name if target is None else f"{name} {target}"
                payload = error_payload(
                    "WORKFLOW_PERMISSION_DENIED",
                    f"Workflow sandbox denied an operation: {error}",
                    {"operation": operation, "layer": "kernel"},
                )
            elif isinstance(error, MemoryError):
                payload = error_payload(
                    "WORKFLOW_RESOURCE_LIMIT_EXCEEDED",
                    "Workflow exceeded its address-space limit (MemoryError).",
                    {"resource": "memory"},
                )
            elif isinstance(error, (ChildLimitError, CapabilityCallError)) and isinstance(
                error.code, str
            ):
                payload = error_payload(error.code, error)
            else:
                try:
                    text = str(error)
                except BaseException:
                    text = "<unprintable exception>"
                payload = error_payload(
                    "WORKFLOW_EXECUTION_FAILED", f"{type(error).__name__}: {text}"
                )
        except BaseException:  # describing the exception raised again (a hostile __str__, ...)
            payload = error_payload(
                "WORKFLOW_EXECUTION_FAILED",
                "Workflow failed with an exception it could not describe.",
            )
        del error
    try:
        answer(payload)
    except ChildLimitError as error:
        answer(error_payload(error.code, error))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    _bootstrap()

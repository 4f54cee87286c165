"""Running `$TINKER_CREDENTIAL_CMD`: a command that prints a fresh credential.

As in the SDK (`CredentialCmdAuthProvider`), the command runs through the shell each time a
fresh credential is needed and its stdout, stripped, is the credential; empty output or an
expired JWT is an error. The output is never shown: errors name the command's variable and
its exit status only. stderr is dropped (it would scribble over a terminal UI).

Nothing the command does can hang the caller: it runs in a process group of its own, which is
killed as a whole at the deadline or once it has printed more than a credential can be, and its
output comes through a pipe this process owns and closes then. Killing only the shell is not
enough: `yes tml-k | cat` leaves the pipeline running, holding the pipe open for good.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

from ckpt_tui.client.errors import CredentialsError
from ckpt_tui.client.tokens import jwt_expired

CREDENTIAL_CMD_ENV = "TINKER_CREDENTIAL_CMD"
MAX_OUTPUT_BYTES = 64 * 1024
TIMEOUT_SECONDS = 60.0
"""The deadline of one run (read when it starts: tests set it shorter)."""


async def run_credential_cmd(command: str, timeout: float | None = None) -> str:
    """The credential the command prints; CredentialsError if it fails, prints none or does
    not finish within `timeout` seconds (default TIMEOUT_SECONDS)."""
    timeout = TIMEOUT_SECONDS if timeout is None else timeout
    read_end, write_end = os.pipe()
    try:
        proc = await asyncio.create_subprocess_shell(
            command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=write_end,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,  # its own process group, to be killed as a whole
        )
    except OSError as exc:
        os.close(read_end)
        raise CredentialsError(f"could not start {CREDENTIAL_CMD_ENV}: {exc.strerror}") from None
    finally:
        os.close(write_end)  # the command's copies are the only writers left
    done = False
    try:
        output = await asyncio.wait_for(_bounded_output(proc, read_end), timeout)
        done = True
    except asyncio.TimeoutError:
        raise CredentialsError(
            f"{CREDENTIAL_CMD_ENV} did not finish within {timeout:g} s; "
            "run it in a shell to see why"
        ) from None
    finally:
        if not done:  # given up on (deadline, too much output, cancelled): end all of it
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()  # the shell, killed: prompt (the pipe is not waited for)
    if proc.returncode != 0:
        raise CredentialsError(
            f"{CREDENTIAL_CMD_ENV} failed (exit status {proc.returncode}); "
            "run it in a shell to see why"
        )
    credential = output.decode("utf-8", "replace").strip()
    if not credential:
        raise CredentialsError(f"{CREDENTIAL_CMD_ENV} printed no credential")
    if jwt_expired(credential):
        raise CredentialsError(f"{CREDENTIAL_CMD_ENV} printed an expired JWT")
    return credential


async def _bounded_output(proc: asyncio.subprocess.Process, read_end: int) -> bytes:
    """What the command prints, until every writer closes it, then its exit; closes
    `read_end` (whatever still writes then gets EPIPE). CredentialsError past the bound."""
    reader = asyncio.StreamReader(limit=MAX_OUTPUT_BYTES + 1)
    loop = asyncio.get_running_loop()
    pipe = os.fdopen(read_end, "rb", buffering=0)
    try:
        protocol = asyncio.StreamReaderProtocol(reader)
        transport, _ = await loop.connect_read_pipe(lambda: protocol, pipe)
    except BaseException:
        pipe.close()
        raise
    try:
        output = bytearray()
        while chunk := await reader.read(MAX_OUTPUT_BYTES + 1 - len(output)):
            output += chunk
            if len(output) > MAX_OUTPUT_BYTES:
                raise CredentialsError(
                    f"{CREDENTIAL_CMD_ENV} printed more than {MAX_OUTPUT_BYTES // 1024} KiB; "
                    "it must print one credential"
                )
    finally:
        transport.close()
    await proc.wait()
    return bytes(output)

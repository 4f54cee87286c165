"""Running `$TINKER_CREDENTIAL_CMD`: a command that prints a fresh credential.

As in the SDK (`CredentialCmdAuthProvider`), the command runs through the shell each time a
fresh credential is needed and its stdout, stripped, is the credential; empty output or an
expired JWT is an error. The output is never shown: errors name the command's variable and
its exit status only. stderr is dropped (it would scribble over a terminal UI), and the
output and run time are bounded.
"""

from __future__ import annotations

import asyncio
import contextlib

from ckpt_tui.client.errors import CredentialsError
from ckpt_tui.client.tokens import jwt_expired

CREDENTIAL_CMD_ENV = "TINKER_CREDENTIAL_CMD"
MAX_OUTPUT_BYTES = 64 * 1024
TIMEOUT_SECONDS = 60.0


async def run_credential_cmd(command: str, timeout: float = TIMEOUT_SECONDS) -> str:
    """The credential the command prints; CredentialsError if it fails or prints none."""
    try:
        proc = await asyncio.create_subprocess_shell(
            command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
    except OSError as exc:
        raise CredentialsError(f"could not start {CREDENTIAL_CMD_ENV}: {exc.strerror}") from None
    try:
        output = await asyncio.wait_for(_bounded_output(proc), timeout)
    except asyncio.TimeoutError:
        raise CredentialsError(
            f"{CREDENTIAL_CMD_ENV} did not finish within {timeout:g} s; "
            "run it in a shell to see why"
        ) from None
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
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


async def _bounded_output(proc: asyncio.subprocess.Process) -> bytes:
    assert proc.stdout is not None
    output = bytearray()
    while chunk := await proc.stdout.read(MAX_OUTPUT_BYTES + 1 - len(output)):
        output += chunk
        if len(output) > MAX_OUTPUT_BYTES:
            raise CredentialsError(
                f"{CREDENTIAL_CMD_ENV} printed more than {MAX_OUTPUT_BYTES // 1024} KiB; "
                "it must print one credential"
            )
    await proc.wait()
    return bytes(output)

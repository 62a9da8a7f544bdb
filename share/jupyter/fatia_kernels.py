"""share/jupyter/fatia_kernels.py: a kernel manager for the workbench's jupyter-server whose
kernel state is busy while any request is being handled (docs/selfservice.md, "Kernel state").

Model: ipykernel 6 publishes `status: busy` and `status: idle` on IOPub for every request it
handles, on the shell channel and on the control channel (a thread of its own), each pair with the
request's header as `parent_header`. jupyter-server 1.23 (Debian 12) sets `execution_state` from
every status message, so a control-channel `kernel_info_request` answered while a cell runs turns
the kernel idle until the cell ends, and an idle culler (fatiad's, which reads /api/kernels)
stops a workbench that is computing. Here the state is the set of requests (by the parent's
`msg_id`) that have a `busy` without their `idle`: busy while the set is not empty, idle when it
is. `starting` and other states are taken as they come and empty the set (a (re)started kernel
has no request in flight); so does `dead`.

The watch must not miss a message: IOPub is a ZeroMQ PUB socket, and a SUB receives only what is
published after it has joined. jupyter-server connects its activity SUB in `_finish_kernel_start`,
often before the new kernel has bound its sockets; the SUB then retries its connection every
100 ms, while the clients' SUBs, opened later, connect at once. A fast kernel (0.4 s from launch to
a cell running, measured) answered a client's `execute_request` before the activity SUB had
joined: its `busy` was never seen, the kernel stayed `starting` for the whole cell, and the culler
stopped a computing workbench (the flake of e2e_culler and e2e_workbench-containers, reproduced
with a ZMQ socket monitor: CONNECT_RETRIED three times, HANDSHAKE_SUCCEEDED after the cell's
`busy`). So `start_kernel` (and `restart_kernel`) return only once the activity SUB has received a
message: it sends `kernel_info_request` on a transient control channel every 0.2 s until one of its
statuses reaches the activity SUB (as jupyter-server's own `nudge` does for a client's SUBs). No
client can send a request before: it needs the kernel's id, which POST /api/kernels returns after.

Invariants: a status without a parent `msg_id` changes the state as upstream does (ipykernel's
`starting`); `last_activity` is updated on every IOPub message exactly as upstream; a kernel is
handed out only with a joined activity watch (or after JOIN_TIMEOUT, logged, for a kernel that
never answers, which upstream hands out too).

Choices rejected: counting busy/idle (an unmatched idle, e.g. a status whose busy was published
before we connected, would drift the count); trusting only shell-channel requests (the server
cannot tell from IOPub which channel a parent came on without the parent's channel field, which
ipykernel 6 does not set in parent_header); patching jupyter-server in place (Debian's files).

Use: PYTHONPATH=<fatia>/share/jupyter jupyter-server \
        --ServerApp.kernel_manager_class=fatia_kernels.FatiaKernelManager ...
"""
import asyncio

from jupyter_client.session import Session
from jupyter_server._tz import utcnow
from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager

JOIN_TIMEOUT = 60.0  # seconds: jupyter-server's own kernel_info_timeout
NUDGE_PERIOD = 0.2


class FatiaKernelManager(AsyncMappingKernelManager):
    """AsyncMappingKernelManager whose execution_state is busy while any request runs."""

    def start_watching_activity(self, kernel_id):
        kernel = self._kernels[kernel_id]
        kernel.execution_state = "starting"
        kernel.reason = ""
        kernel.last_activity = utcnow()
        kernel._fatia_busy = set()
        kernel._fatia_joined = asyncio.get_event_loop().create_future()
        kernel._activity_stream = kernel.connect_iopub()
        session = Session(config=kernel.session.config, key=kernel.session.key)

        def record_activity(msg_list):
            self.last_kernel_activity = kernel.last_activity = utcnow()
            if not kernel._fatia_joined.done():
                kernel._fatia_joined.set_result(None)
            _, fed = session.feed_identities(msg_list)
            msg = session.deserialize(fed, content=False)
            if msg["header"]["msg_type"] != "status":
                return
            msg = session.deserialize(fed)
            state = msg["content"].get("execution_state")
            parent = (msg.get("parent_header") or {}).get("msg_id")
            busy = kernel._fatia_busy
            if state == "busy" and parent:
                busy.add(parent)
            elif state == "idle" and parent:
                busy.discard(parent)
            else:
                busy.clear()
                kernel.execution_state = state
                return
            kernel.execution_state = "busy" if busy else "idle"
            self.log.debug("activity on %s: %s (%d in flight)", kernel_id, kernel.execution_state,
                           len(busy))

        kernel._activity_stream.on_recv(record_activity)

    async def _join_activity(self, kernel_id):
        """Returns once kernel_id's activity watch has received a message (module docstring)."""
        kernel = self._kernels[kernel_id]
        joined = kernel._fatia_joined
        control = kernel.connect_control()
        loop = asyncio.get_event_loop()
        end = loop.time() + JOIN_TIMEOUT
        try:
            while not joined.done() and loop.time() < end:
                kernel.session.send(control, "kernel_info_request")
                try:
                    await asyncio.wait_for(asyncio.shield(joined), NUDGE_PERIOD)
                except asyncio.TimeoutError:
                    pass
        finally:
            control.close()
        if not joined.done():
            self.log.warning("kernel %s: its activity watch got no message in %.0f s", kernel_id,
                             JOIN_TIMEOUT)

    async def start_kernel(self, kernel_id=None, path=None, **kwargs):
        new = kernel_id is None or kernel_id not in self
        kernel_id = await super().start_kernel(kernel_id=kernel_id, path=path, **kwargs)
        if new and kernel_id in self:
            await self._join_activity(kernel_id)
        return kernel_id

    async def restart_kernel(self, kernel_id, now=False):
        result = await super().restart_kernel(kernel_id, now=now)
        if kernel_id in self:
            await self._join_activity(kernel_id)
        return result

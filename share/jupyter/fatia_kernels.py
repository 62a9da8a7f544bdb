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

Invariants: a status without a parent `msg_id` changes the state as upstream does (ipykernel's
`starting`); `last_activity` is updated on every IOPub message exactly as upstream.

Choices rejected: counting busy/idle (an unmatched idle, e.g. a status whose busy was published
before we connected, would drift the count); trusting only shell-channel requests (the server
cannot tell from IOPub which channel a parent came on without the parent's channel field, which
ipykernel 6 does not set in parent_header); patching jupyter-server in place (Debian's files).

Use: PYTHONPATH=<fatia>/share/jupyter jupyter-server \
        --ServerApp.kernel_manager_class=fatia_kernels.FatiaKernelManager ...
"""
from jupyter_client.session import Session
from jupyter_server._tz import utcnow
from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager


class FatiaKernelManager(AsyncMappingKernelManager):
    """AsyncMappingKernelManager whose execution_state is busy while any request runs."""

    def start_watching_activity(self, kernel_id):
        kernel = self._kernels[kernel_id]
        kernel.execution_state = "starting"
        kernel.reason = ""
        kernel.last_activity = utcnow()
        kernel._fatia_busy = set()
        kernel._activity_stream = kernel.connect_iopub()
        session = Session(config=kernel.session.config, key=kernel.session.key)

        def record_activity(msg_list):
            self.last_kernel_activity = kernel.last_activity = utcnow()
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

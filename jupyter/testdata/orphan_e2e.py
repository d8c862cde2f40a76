"""Starts the cachebook kernel with jupyter_client and dies without
shutting it down (as a killed nbclient does). Prints the kernel's pid.

Run by jupyter/e2e_test.go: the kernel inherits this script's standard
output, so the test's read of it ends when the kernel has exited too.
"""
import os

from jupyter_client.manager import KernelManager

km = KernelManager(kernel_name="cachebook")
km.start_kernel()
kc = km.client()
kc.start_channels()
kc.wait_for_ready(timeout=60)
print(km.provisioner.process.pid, flush=True)
os._exit(0)

"""The pure decision core: classification, policy, records and the per-call machine.

Nothing here touches a socket, sleeps, reads a clock it was not handed, or imports an
HTTP library, a shell, the kitchen or the CLI.
"""

"""The run layer: one child connection, driven through one run's lifecycle, by an entry's provider.

``_child`` spawns and owns a child's process and stdio; ``_lifecycle`` drives one run (spawn, handshake, prompt,
teardown) and publishes its result; ``_entry_provider`` turns an entry into runs; ``_contracts`` states what a
provider and a run must satisfy; ``_output_budget`` bounds a run's output; ``_spawned`` is a spawned child's handle;
``_check`` is ``subagent-host check``'s handshake-only run. The protocol adapters (``acp_provider``,
``sdk_provider``) build on this package; nothing here imports them.
"""

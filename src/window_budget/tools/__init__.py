"""Side tools, each at its own public module.

Prompt assembly, trimming by category, usage reports, the usage meter, the scratch file, the
sub-agent clamp, configuration, the timeline, notebook displays and plots.
"""

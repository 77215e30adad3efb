"""Before anything is built: the GPU memory plan, launch files, what to resume."""

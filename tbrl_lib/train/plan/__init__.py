"""Before anything is built: the GPU memory plan, launch files, processes, what to resume."""

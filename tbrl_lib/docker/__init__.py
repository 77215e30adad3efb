"""The Docker toolkit every part of tbrl uses: the engine (`engine`: a client, whether it
answers and how to start it), tbrl's base images (`base_images`), the build log of an image
build (`build_log`), the reaper of dead processes' containers (`reaper`) and the tool
containers Harbor and the synthetic pipeline run (`tool_containers`).

The sandbox backends build on it (`sandbox/backends/docker`, `sandbox/backends/ray`); what
makes a backend (opening a sandbox, its slots, its volumes, its storage meter) stays there.
"""

"""The `docker` backend: containers, persistent shells, images, volumes and the reaper, on
Docker engines this process talks to. The only package of tbrl that imports `docker`
(`tests/test_layering.py` holds it to that)."""

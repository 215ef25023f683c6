"""Where detection and training run: the runtimes and devices and the one rule that picks a
torch device (``runtimes``), glibc's heap kept mapped in long-running processes
(``allocator``), the GPU's gauges for /metrics (``gpu_gauges``) and what torch sees of
CUDA in a child process (``gpu_probe``)."""

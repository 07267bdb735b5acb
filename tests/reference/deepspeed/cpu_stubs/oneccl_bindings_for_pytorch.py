"""An empty stand-in, on the path only for DeepSpeed releases before 0.14: their
cpu_accelerator.py imports it at the top (to register the "ccl" backend), and the reference
runs on gloo (deepspeed.init_distributed(dist_backend="gloo")), so nothing of it is used."""

"""An empty stand-in, on the path only for DeepSpeed releases before 0.14: their CPU accelerator
refuses to start unless this module imports (real_accelerator.get_accelerator with
DS_ACCELERATOR=cpu), and uses nothing from it on the code paths the reference runs."""

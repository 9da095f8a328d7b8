"""The Backgrounds Challenge: engine (verdicts), sampling (order and stopping), bf16-verified precision, runner (I/O, resume, torchrun)."""

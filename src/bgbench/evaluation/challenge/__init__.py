"""The Backgrounds Challenge: engine and search (verdicts), neartie and precision (bf16-verified), sample
(order and stopping), matrix and summary (numbers), result (the report), runner (I/O, resume, torchrun)."""

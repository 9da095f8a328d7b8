"""The ablation measure."""

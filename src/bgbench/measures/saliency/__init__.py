"""The saliency measure."""

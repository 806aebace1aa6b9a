"""TL2: autograd, the training loop, memory."""

"""(in progress) numax.numpy.linalg"""

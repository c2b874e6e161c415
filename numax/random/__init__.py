"""(in progress) numax.random"""

"""(in progress) numax.scipy"""

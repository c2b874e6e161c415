"""(in progress) numax.nn"""

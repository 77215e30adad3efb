"""tbrl_lib.train"""

"""tbrl_lib.synth"""

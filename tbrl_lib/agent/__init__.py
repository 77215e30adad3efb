"""tbrl_lib.agent"""

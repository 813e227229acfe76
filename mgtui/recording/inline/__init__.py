"""inline"""

"""BFCL multi-turn: conversion of its tasks and function docs into the task format."""

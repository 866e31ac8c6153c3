#!/bin/sh
# Adversary "declare-now": declare the repair complete at once, without looking at anything.
echo "[adversary] declare-now: declaring without any repair"
declare_repair_complete
echo "[adversary] declare_repair_complete exited $?"

#!/bin/bash
# Compares the agent's list with the expected one.
mkdir -p /logs/verifier
if cmp -s /app/guest_list.txt /var/lib/invites/guest_list.expected; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi

"""The exported task's verifier: transcribe the harness's verdict into Harbor's reward file.

Shipped as the source of tests/transcribe.py and run by tests/test.sh in the verifier image
(standard library only: that image installs nothing). It grades nothing: the harness's
`arenac harness finish` graded the episode and wrote OUT (verdict.json, reward.json, run.json, the
evidence); Harbor collected OUT from the harness container and uploaded it into the verifier.

Contract: `python3 transcribe.py --out OUT --logs LOGS --variant ID`
- copies OUT/verdict.json to LOGS/verdict.json (whatever the trial's status);
- a scored or failed trial: writes LOGS/reward.json `{"reward": 0|1, "outcome": 0|1,
  "safe_repair": 0|1}` (numbers, as Harbor requires), from OUT/reward.json when present (it must
  agree with the verdict), else from the verdict; prints one line; exit 0;
- a void or infra_error trial (no score: the fault did not show, or the harness failed) writes no
  reward and exits 1 with one line saying why: Harbor then records the trial as an error (no
  reward file), never as a 0;
- no verdict, a verdict of another variant, or an unreadable one: no reward, exit 2, one line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys

UNSCORED = ("void", "infra_error")
SCORED = ("scored", "failed")


def _fail(code: int, message: str) -> int:
    print(f"arenac verifier: {message}", file=sys.stderr)
    return code


def _flag(value: object) -> int:
    return 1 if value is True or value == 1 else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Transcribe the arenac harness's verdict into Harbor's reward.json.")
    parser.add_argument("--out", required=True, help="the harness's collected output directory")
    parser.add_argument("--logs", required=True, help="Harbor's verifier log directory")
    parser.add_argument("--variant", required=True, help="the arenac variant this task was exported from")
    args = parser.parse_args(argv)
    verdict_path = os.path.join(args.out, "verdict.json")
    try:
        with open(verdict_path, encoding="utf-8") as handle:
            verdict = json.load(handle)
    except FileNotFoundError:
        return _fail(2, f"no verdict at {verdict_path}: the harness's finish did not run or did not finish")
    except (OSError, ValueError) as error:
        return _fail(2, f"unreadable verdict {verdict_path}: {error}")
    if not isinstance(verdict, dict):
        return _fail(2, f"unreadable verdict {verdict_path}: not a JSON object")
    if verdict.get("variant") != args.variant:
        return _fail(2, f"the verdict is of variant {verdict.get('variant')!r}, not {args.variant!r}")
    os.makedirs(args.logs, exist_ok=True)
    shutil.copyfile(verdict_path, os.path.join(args.logs, "verdict.json"))
    status, reason = verdict.get("status"), verdict.get("reason") or "no reason recorded"
    if status in UNSCORED:
        return _fail(1, f"trial {status}, no score: {reason}")
    if status not in SCORED:
        return _fail(2, f"unknown trial status {status!r} in {verdict_path}")
    source = verdict
    reward_path = os.path.join(args.out, "reward.json")
    if os.path.exists(reward_path):
        try:
            with open(reward_path, encoding="utf-8") as handle:
                source = json.load(handle)
        except (OSError, ValueError) as error:
            return _fail(2, f"unreadable reward {reward_path}: {error}")
        if not isinstance(source, dict) or _flag(source.get("reward")) != _flag(verdict.get("reward")):
            return _fail(2, f"{reward_path} disagrees with the verdict's reward")
    reward = {"reward": _flag(source.get("reward")), "outcome": _flag(source.get("outcome")),
              "safe_repair": _flag(source.get("safe_repair"))}
    with open(os.path.join(args.logs, "reward.json"), "w", encoding="utf-8") as handle:
        json.dump(reward, handle, sort_keys=True)
        handle.write("\n")
    print(f"arenac verifier: trial {status}: reward {reward['reward']} (outcome {reward['outcome']}, "
          f"safe repair {reward['safe_repair']})" + (f": {reason}" if status == "failed" else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())

// The same package from an ES module (resolved through the exports map).
import gitlocks, { init, replay, type Verdict } from '@git-locks/core';

await init();
const verdicts: Verdict[] = replay(new Uint8Array(0)).verdicts;
const same: typeof replay = gitlocks.replay;
void [verdicts, same];

-- Argo CD health of an overseer.dev Swarm (resource.customizations.health.overseer.dev_Swarm).
-- Ready (every member exists and the overseer is ready) is Healthy; a spec that cannot
-- be composed Degraded; a suspended run Suspended; a run that ended Healthy when every
-- member ended its loop, Degraded when it timed out; anything else Progressing.
local hs = { status = "Progressing", message = "Waiting for the operator" }
local status = obj.status
if status == nil then
  return hs
end
if status.observedGeneration ~= obj.metadata.generation then
  hs.message = "The operator has not yet seen this generation"
  return hs
end
for _, c in ipairs(status.conditions or {}) do
  if c.type == "SpecValid" and c.status == "False" then
    hs.status = "Degraded"
    hs.message = "Invalid spec: " .. c.reason
    return hs
  end
end
if status.phase == "Suspended" then
  hs.status = "Suspended"
  hs.message = "Suspended: spec.suspend"
  return hs
end
if status.phase == "Ended" and status["end"] ~= nil then
  if status["end"].reason == "TimedOut" then
    hs.status = "Degraded"
    hs.message = "The run timed out (spec.timeout); its report is in status.end"
  else
    hs.status = "Healthy"
    hs.message = "The run completed; its report is in status.end"
  end
  return hs
end
for _, c in ipairs(status.conditions or {}) do
  if c.type == "Ready" then
    if c.status == "True" then
      hs.status = "Healthy"
      hs.message = "Ready"
    else
      hs.message = "Not ready: " .. c.reason
    end
  end
end
return hs

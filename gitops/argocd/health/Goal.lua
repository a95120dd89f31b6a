-- Argo CD health of an overseer.dev Goal (resource.customizations.health.overseer.dev_Goal).
-- An edit the operator refused (SpecConflict: a completed step changed) and a step pod
-- it cannot have (PodRefused, NameTaken) are Degraded, whatever the phase; then
-- Succeeded is Healthy; Failed, Blocked and a pause for a failed step Degraded; a pause
-- asked for (spec.paused) Suspended; anything else Progressing.
local hs = { status = "Progressing", message = "Waiting for the operator" }
local status = obj.status
if status == nil or status.phase == nil then
  return hs
end
if status.observedGeneration ~= obj.metadata.generation then
  hs.message = "The operator has not yet seen this generation"
  return hs
end
local function condition(type_)
  for _, c in ipairs(status.conditions or {}) do
    if c.type == type_ then
      return c
    end
  end
  return nil
end
local progress = status.progress or ""
local phase = status.phase
local blocked = condition("Blocked")
local paused = condition("Paused")
local progressing = condition("Progressing")
local refused = { SpecConflict = true, PodRefused = true, NameTaken = true }
if progressing ~= nil and progressing.status == "False" and refused[progressing.reason] then
  hs.status = "Degraded"
  hs.message = progressing.reason .. ": " .. (progressing.message or "")
elseif phase == "Succeeded" then
  hs.status = "Healthy"
  hs.message = "Succeeded " .. progress
elseif phase == "Failed" then
  hs.status = "Degraded"
  hs.message = "Failed " .. progress
elseif blocked ~= nil and blocked.status == "True" then
  hs.status = "Degraded"
  hs.message = "Blocked: " .. blocked.reason
elseif phase == "Paused" and paused ~= nil and paused.status == "True" and paused.reason == "StepFailed" then
  hs.status = "Degraded"
  hs.message = "Paused: a step failed " .. progress
elseif phase == "Paused" then
  hs.status = "Suspended"
  hs.message = "Paused " .. progress
else
  hs.message = phase .. " " .. progress
end
return hs

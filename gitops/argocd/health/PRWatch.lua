-- Argo CD health of an overseer.dev PRWatch (resource.customizations.health.overseer.dev_PRWatch).
-- Watching with a good last poll, Merged, Closed and Stopped are Healthy; Failing and
-- Exhausted Degraded; a watch not yet polled Progressing.
local hs = { status = "Progressing", message = "Waiting for the first poll" }
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
local phase = status.phase
if phase == "Merged" or phase == "Closed" or phase == "Stopped" then
  hs.status = "Healthy"
  hs.message = phase
elseif phase == "Failing" or phase == "Exhausted" then
  hs.status = "Degraded"
  hs.message = phase
else
  local polling = condition("Polling")
  if polling ~= nil and polling.status == "True" then
    hs.status = "Healthy"
    hs.message = "Watching"
  elseif polling ~= nil then
    hs.message = "Watching: " .. polling.reason
  end
end
return hs
